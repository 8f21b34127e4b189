from flowproof.cli import main

main()
