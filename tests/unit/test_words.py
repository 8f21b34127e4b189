from flowproof.core.words import plural


def test_a_count_of_one_keeps_the_noun_singular_and_every_other_count_adds_an_s() -> None:
    assert plural(1, "turn") == "1 turn"
    assert plural(0, "turn") == "0 turns"
    assert plural(2, "MCP call") == "2 MCP calls"
