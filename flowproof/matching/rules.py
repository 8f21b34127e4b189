"""What a flow declared about its request bodies: the facts normalised, the fields ignored.

Both are narrow answers to drift the agent does not control (design: "Settled in review"),
visible in the spec and in every report. The proxy's backends apply them: requests are
normalised before they are matched or stored, served responses restored; ignored fields are
stripped only for the comparison.
"""

from __future__ import annotations

from dataclasses import dataclass

from flowproof.matching.fields import FieldPath
from flowproof.matching.normalize import NO_NORMALIZER, Normalizer


@dataclass(frozen=True, slots=True)
class RequestRules:
    normalizer: Normalizer = NO_NORMALIZER
    ignored: tuple[FieldPath, ...] = ()

    @property
    def normalized(self) -> tuple[str, ...]:
        """The facts normalised: the `normalize:` entries as declared (`cwd`, `date`,
        `${PROJECT}`), then the defaults in force not declared."""
        return self.normalizer.normalized

    @property
    def ignored_fields(self) -> tuple[str, ...]:
        """The `ignore_fields:` paths, as declared."""
        return tuple(path.text for path in self.ignored)


STRICT = RequestRules()
"""Nothing declared: every body byte counts, as it always has."""
