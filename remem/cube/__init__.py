"""MemCubes: packaged, signed units of memory that can be shared and installed; and the
Portable AI Memory (PAM) interchange format.

- :mod:`.format`: the cube file (a zip of JSON files, no code), its strict records;
- :mod:`.keys`: the Ed25519 signing key;
- :mod:`.pack`: a scope's memories into a cube;
- :mod:`.install`: verify, install (one transaction, watermarked) and uninstall;
- :mod:`.registry`: the local folder of cubes;
- :mod:`.pam`: export and import in the PAM memory-store format.
"""

from .format import Cube, CubeManifest, read_cube
from .install import Installed, describe, install, installed_cubes, uninstall, verify
from .keys import SigningKey, load_or_create, load_signing_key
from .pack import pack
from .registry import entries, registry_path, resolve

__all__ = ["Cube", "CubeManifest", "Installed", "SigningKey", "describe", "entries", "install",
           "installed_cubes", "load_or_create", "load_signing_key", "pack", "read_cube",
           "registry_path", "resolve", "uninstall", "verify"]
