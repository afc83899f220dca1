# The nexa Python tool bootstrap. It is embedded in the nexa binary and run
# as `python3 -u -c <this text>`; it never receives user code or arguments on
# its command line.
#
# Protocol (see doc.go):
#   stdin: one JSON request, read to EOF:
#     {"kind": "body"|"file", "source": body text or file path,
#      "function": tool name, "params": [identifiers],
#      "arguments": {name: value}, "secrets": {key: value},
#      "close_fds": true when sandboxed (optional)}
#   fd 3: result channel, newline-delimited JSON records:
#     {"event": "start"}            written just before any user code runs
#     {"ok": true, "output": str}   the tool returned
#     {"ok": false, "error": str}   the tool raised (traceback tail)
#     {"unknown": true, "message": str}  the tool raised ToolOutcomeUnknown
#     {"fatal": str}                the request could not be set up; no
#                                   user code ran
#   stdout, stderr: whatever the tool prints (the run's tool log).
import sys


def _nexa_main():
    # `python -c` puts the working directory first on sys.path. Take it off
    # while the bootstrap imports its own modules, so a project file named
    # json.py or ast.py cannot replace them, and put it back for user code.
    cwd_on_path = bool(sys.path) and sys.path[0] == ""
    if cwd_on_path:
        sys.path.pop(0)

    import os
    import json
    import keyword
    import types
    import time
    import ast
    import linecache
    import traceback
    import importlib.util

    def user_path():
        if cwd_on_path and (not sys.path or sys.path[0] != ""):
            sys.path.insert(0, "")

    # Move the result channel away from fd 3 so that user code that opens
    # files or spawns processes cannot write to it by accident.
    try:
        import fcntl

        out = fcntl.fcntl(3, fcntl.F_DUPFD, 200)
    except Exception:
        out = os.dup(3)
    os.set_inheritable(out, False)
    os.close(3)

    def close_inherited(keep):
        # A sandboxed tool must not hold descriptors nexa itself inherited
        # without close-on-exec: they may lead outside the sandbox.
        try:
            fds = [int(n) for n in os.listdir("/proc/self/fd")]
        except (OSError, ValueError):
            return
        for fd in fds:
            if fd > 2 and fd != keep:
                try:
                    os.close(fd)
                except OSError:
                    pass

    def emit(record):
        data = (json.dumps(record) + "\n").encode("ascii")
        view = memoryview(data)
        while view:
            written = os.write(out, view)
            view = view[written:]

    def finish(record):
        try:
            emit(record)
        finally:
            try:
                os.close(out)
            except OSError:
                pass

    if sys.version_info < (3, 8):
        finish({"fatal": "Python 3.8 or newer is required, found %s" % (sys.version.split()[0],)})
        return 2

    try:
        raw = sys.stdin.buffer.read()
        try:
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.close(null)
        except OSError:
            pass
        request = json.loads(raw.decode("utf-8"))
        kind = request["kind"]
        source = request["source"]
        function = request["function"]
        params = request["params"]
        arguments = request["arguments"]
        secrets = request.get("secrets") or {}
        if request.get("close_fds"):
            close_inherited(out)

        if kind not in ("body", "file"):
            raise ValueError("unknown kind %r" % (kind,))
        if not isinstance(source, str) or not isinstance(function, str):
            raise ValueError("source and function must be strings")
        if not isinstance(arguments, dict) or not isinstance(secrets, dict):
            raise ValueError("arguments and secrets must be objects")
        for name in params:
            if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
                raise ValueError("invalid parameter name")
    except BaseException as exc:
        # Only the exception type and a generic message: a request may hold
        # secrets, and a decoder message could quote them.
        finish({"fatal": "bad request from nexa (%s)" % (type(exc).__name__,)})
        return 2

    class ToolOutcomeUnknown(Exception):
        """Raise to say the tool cannot know whether its effect happened."""

    class NexaSecrets(object):
        """Secrets loaded by nexa, then the environment."""

        __slots__ = ("_values",)

        def __init__(self, values):
            self._values = values

        def get(self, key, default=None):
            if key in self._values:
                return self._values[key]
            return os.environ.get(key, default)

        def __getitem__(self, key):
            value = self.get(key)
            if value is None:
                raise KeyError(key)
            return value

        def __contains__(self, key):
            return self.get(key) is not None

        def __repr__(self):
            return "<nexa_secrets>"

    nexa_secrets = NexaSecrets(secrets)
    del secrets, request, raw

    def is_unknown(exc):
        return isinstance(exc, ToolOutcomeUnknown) or type(exc).__name__ == "ToolOutcomeUnknown"

    def describe(exc, frames):
        # Frames below the bootstrap's own call are the tool's; a syntax
        # error has none worth showing.
        tb = exc.__traceback__.tb_next if frames and exc.__traceback__ is not None else None
        full = "".join(traceback.format_exception(type(exc), exc, tb))
        try:
            sys.stderr.write(full)
            sys.stderr.flush()
        except Exception:
            pass
        lines = full.rstrip("\n").split("\n")
        if len(lines) > 30:
            lines = [lines[0], "  ..."] + lines[-28:]
        text = "\n".join(lines)
        if len(text) > 4000:
            text = "...\n" + text[-4000:]
        return text

    def render(value):
        if value is None:
            return ""
        if isinstance(value, str):
            return value
        if isinstance(value, (bytes, bytearray)):
            return bytes(value).decode("utf-8", "replace")
        try:
            return json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError):
            return str(value)

    sys.dont_write_bytecode = True
    started = False
    try:
        if kind == "body":
            filename = "<python! body of %s>" % (function,)
            linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
            try:
                body = ast.parse(source, filename, "exec")
                tree = ast.parse("def __nexa_tool__(%s):\n    pass\n" % (", ".join(params),), filename, "exec")
                if body.body:
                    tree.body[0].body = body.body
                code = compile(tree, filename, "exec", dont_inherit=True)
            except SyntaxError as exc:
                finish({"ok": False, "error": describe(exc, False)})  # no user code ran
                return 0
            module = types.ModuleType("__nexa_tool__")
            module.__dict__.update(
                {
                    "__file__": filename,
                    "nexa_secrets": nexa_secrets,
                    "ToolOutcomeUnknown": ToolOutcomeUnknown,
                    "os": os,
                    "sys": sys,
                    "json": json,
                    "time": time,
                }
            )
            sys.modules["__nexa_tool__"] = module
            exec(code, module.__dict__)  # defines the function; runs no user code
            fn = module.__dict__.pop("__nexa_tool__")
            if function.isidentifier():
                try:
                    fn.__name__ = function
                    fn.__qualname__ = function
                    fn.__code__ = fn.__code__.replace(co_name=function)
                except Exception:
                    pass
        else:
            if not os.path.isfile(source):
                finish({"ok": False, "error": "python tool file %s not found" % (source,)})
                return 0
            module_name = "nexa_tool_%s" % (function,)
            spec = importlib.util.spec_from_file_location(module_name, source)
            if spec is None or spec.loader is None:
                finish({"ok": False, "error": "cannot load python tool file %s" % (source,)})
                return 0
            module = importlib.util.module_from_spec(spec)
            module.__dict__.update({"nexa_secrets": nexa_secrets, "ToolOutcomeUnknown": ToolOutcomeUnknown})
            sys.modules[module_name] = module
            user_path()
            sys.path.insert(0, os.path.dirname(os.path.abspath(source)))
            emit({"event": "start"})
            started = True
            spec.loader.exec_module(module)
            fn = getattr(module, function, None)
            if not callable(fn):
                finish({"ok": False, "error": "python tool file %s has no function %s" % (source, function)})
                return 0
        if not started:
            user_path()
            emit({"event": "start"})
            started = True
        output = render(fn(**arguments))
    except BaseException as exc:
        if is_unknown(exc):
            finish({"unknown": True, "message": str(exc) or type(exc).__name__})
        else:
            finish({"ok": False, "error": describe(exc, True)})
        return 0
    finish({"ok": True, "output": output})
    return 0


try:
    _nexa_rc = _nexa_main()
except BaseException:
    _nexa_rc = 70
try:
    sys.stdout.flush()
    sys.stderr.flush()
except Exception:
    pass
sys.exit(_nexa_rc)
