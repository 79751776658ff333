"""`python -m nxcc`: the `neuronx-cc` command."""

from nxcc.cli.main import main

if __name__ == "__main__":
    main()
