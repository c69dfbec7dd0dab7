"""The REST service's API keys: re-exported from :mod:`remem.govern.keys`, which keeps
them in the store (a Memory's are :attr:`remem.Memory.keys`)."""

from ..govern.keys import SCOPES, ApiKey, KeyStore, NewKey, UnknownKeyError, parse_scopes

__all__ = ["SCOPES", "ApiKey", "KeyStore", "NewKey", "UnknownKeyError", "parse_scopes"]
