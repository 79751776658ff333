if not __name__.startswith("nxcc."):
    raise ImportError(f"import nxcc.{__name__}, not {__name__}: each layer has one import name")
