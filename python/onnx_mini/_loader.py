"""Where the library is, and whether it can share the process with `onnx`.

libonnx_mini.so (0.2.0) compiles its own copy of onnx.proto (protobuf package
`onnx`) and links the system's shared libprotobuf. Debian's `onnx` Python
package does the same through libonnx_proto.so. Both register messages named
`onnx.ModelProto`, ... in that one libprotobuf's process-wide descriptor pool,
and protobuf aborts the process on the second registration ("Symbol name
"onnx.AttributeProto" conflicts with the existing symbol"), whichever of the
two comes second.

This module recognizes the case from the files themselves (an embedded
FileDescriptorProto of package `onnx`, and a DT_NEEDED on the same
libprotobuf soname), so that onnx_mini can refuse cleanly instead of letting
the process die:

- `onnx` imported first: conflict_before_load() returns the reason, and the
  library is not loaded;
- onnx_mini first: guard_after_load() makes a later `import onnx` raise
  ImportError.

A library built without the clash (its proto package renamed, protobuf linked
statically with hidden symbols, or a lite runtime) is not affected, nor is an
`onnx` whose extension links protobuf statically (the PyPI wheels).
"""

import ctypes
import importlib.abc
import importlib.machinery
import os
import re
import subprocess
import sys

# A serialized FileDescriptorProto: field 1 (name) "....proto", then field 2
# (package) of 4 bytes: "onnx".
_ONNX_DESCRIPTOR = re.compile(rb"\.proto\x12\x04onnx")
# A DT_NEEDED string (NUL-delimited in .dynstr) naming a shared libprotobuf.
_SHARED_PROTOBUF = re.compile(rb"\x00(libprotobuf(?:-lite)?\.so\.[0-9.]+)\x00")

_ONNX_EXTENSION = "onnx.onnx_cpp2py_export"


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def _shared_protobuf(data):
    m = _SHARED_PROTOBUF.search(data) if data else None
    return m.group(1).decode("ascii") if m else None


def registers_onnx_in(path):
    """The shared libprotobuf soname in which the library at `path` registers
    protobuf package `onnx`, or None."""
    data = _read(path)
    if not data or not _ONNX_DESCRIPTOR.search(data):
        return None
    return _shared_protobuf(data)


def resolve(soname):
    """The file the dynamic loader would take for `soname`, or None:
    LD_LIBRARY_PATH, the ldconfig cache, the default folders."""
    for folder in os.environ.get("LD_LIBRARY_PATH", "").split(":"):
        if folder and os.path.isfile(os.path.join(folder, soname)):
            return os.path.join(folder, soname)
    for ldconfig in ("/sbin/ldconfig", "/usr/sbin/ldconfig"):
        if not os.path.exists(ldconfig):
            continue
        try:
            out = subprocess.run(
                [ldconfig, "-p"], capture_output=True, text=True, env={"LC_ALL": "C"}, timeout=10
            ).stdout
        except (OSError, subprocess.SubprocessError):
            break
        for line in out.splitlines():
            fields = line.strip().split(" => ")
            if len(fields) == 2 and fields[0].split(" ")[0] == soname:
                return fields[1]
        break
    for folder in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"):
        if os.path.isfile(os.path.join(folder, soname)):
            return os.path.join(folder, soname)
    return None


def _message(path, soname, first):
    return (
        "onnx_mini: %s cannot share this process with the `onnx` Python package: both register "
        "ONNX's protobuf messages (package 'onnx') in the shared %s, and protobuf aborts the "
        "process on the second registration. %s Use onnx and onnx_mini in separate processes "
        "(onnx_mini.backend does this by itself), or use a libonnx_mini built without the clash "
        "(see python/README.md)."
        % (
            path,
            soname,
            "`onnx` was imported first, so the library was not loaded."
            if first
            else "onnx_mini was loaded first, so `import onnx` is refused.",
        )
    )


def conflict_before_load(explicit_path, soname):
    """The reason not to load the library, when the `onnx` extension is
    already in the process and the library would clash with it; else None."""
    extension = sys.modules.get(_ONNX_EXTENSION)
    if extension is None or not getattr(extension, "__file__", None):
        return None
    theirs = _shared_protobuf(_read(extension.__file__))
    if theirs is None:
        return None
    path = explicit_path or resolve(soname)
    if path is None:
        return None  # loading will fail and say so
    ours = registers_onnx_in(path)
    if ours is None or ours != theirs:
        return None
    return _message(path, ours, first=True)


def _onnx_extension_protobuf():
    """The shared libprotobuf soname the importable `onnx` package's extension
    links, or None (no such package, or protobuf linked statically)."""
    spec = importlib.machinery.PathFinder.find_spec("onnx")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if name.startswith("onnx_cpp2py_export") and name.endswith(".so"):
                return _shared_protobuf(_read(os.path.join(folder, name)))
    return None


class _RefusingLoader(importlib.abc.Loader):
    def __init__(self, message):
        self.message = message

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        raise ImportError(self.message, name=module.__name__)


class _OnnxImportGuard(importlib.abc.MetaPathFinder):
    """Turns `import onnx`, which would abort the process, into an ImportError.
    (find_spec still finds onnx: only executing it is refused.)"""

    def __init__(self, path, soname):
        self.path = path
        self.soname = soname

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "onnx":
            return None
        if _onnx_extension_protobuf() != self.soname:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None:
            return None
        spec.loader = _RefusingLoader(_message(self.path, self.soname, first=False))
        return spec


def guard_after_load(path):
    """After loading the library from `path`: guards `import onnx` when they clash."""
    soname = registers_onnx_in(path) if path else None
    if soname and not any(isinstance(f, _OnnxImportGuard) for f in sys.meta_path):
        sys.meta_path.insert(0, _OnnxImportGuard(path, soname))


class _DlInfo(ctypes.Structure):
    _fields_ = [
        ("dli_fname", ctypes.c_char_p),
        ("dli_fbase", ctypes.c_void_p),
        ("dli_sname", ctypes.c_char_p),
        ("dli_saddr", ctypes.c_void_p),
    ]


def loaded_file(cdll, symbol):
    """The file the loader took for a loaded library (dladdr of `symbol`), or None."""
    try:
        dladdr = ctypes.CDLL(None).dladdr
        address = ctypes.cast(getattr(cdll, symbol), ctypes.c_void_p).value
    except AttributeError:
        return None
    dladdr.restype = ctypes.c_int
    dladdr.argtypes = (ctypes.c_void_p, ctypes.POINTER(_DlInfo))
    info = _DlInfo()
    if not dladdr(address, ctypes.byref(info)) or not info.dli_fname:
        return None
    name = os.fsdecode(info.dli_fname)
    return os.path.abspath(name) if os.sep in name else name
