"""`python -m nxcc`: the `neuronx-cc` command."""

from nxcc.cli.entry import main

if __name__ == "__main__":
    main()
