# The nexa Python tool bootstrap. It is embedded in the nexa binary and run
# as `python3 -u -c <this text>` (one call) or `python3 -u -c <this text>
# --nexa-zygote` (a fork server for calls, see doc.go); it never receives user
# code or arguments on its command line.
#
# Protocol of a call (see doc.go):
#   stdin: one JSON request, read to EOF (a forked child gets it on its
#     socket instead, see below):
#     {"kind": "body"|"file", "source": body text or file path,
#      "function": tool name, "params": [identifiers],
#      "arguments": {name: value}, "secrets": {key: value},
#      "close_fds": true when sandboxed (optional),
#      "environ": base64 of the NUL-separated call variables to set and
#      "cwd": working directory (both only for a call forked by the zygote)}
#   fd 3 (a forked child gets it on its socket): result channel,
#     newline-delimited JSON records:
#     {"event": "start"}            written just before any user code runs
#     {"ok": true, "output": str}   the tool returned
#     {"ok": false, "error": str}   the tool raised (traceback tail)
#     {"unknown": true, "message": str}  the tool raised ToolOutcomeUnknown
#     {"fatal": str}                the request could not be set up; no
#                                   user code ran
#   stdout, stderr: whatever the tool prints (the run's tool log).
#
# Protocol of the zygote: fd 3 is a SOCK_SEQPACKET control socket to nexa,
# one JSON object per message.
#   zygote -> nexa: {"ready": true, "pid": P} once, after the imports;
#     {"spare": P} carrying (SCM_RIGHTS) nexa's end of a stream socket to
#     the newly forked child P, or {"spare": 0, "error": str}, for each
#     fork request; {"exited": P, "code": C} or {"exited": P, "signal": S}
#     when child P has exited. P stays an unreaped zombie, so its process
#     group id cannot be reused, until nexa releases it.
#   nexa -> zygote: {"op": "fork"}: fork a child ahead of its call;
#     {"op": "release", "pid": P}: nexa has killed P's group, reap P.
#   End of file on the socket: kill every child's process group and exit.
# A forked child waits on its own socket. nexa sends its call there: the
# output pipe and the result channel (SCM_RIGHTS) with the first bytes of
# the request (the JSON object above, with "environ" and "cwd"), then the
# rest, then end of file. End of file alone: the child is not wanted and
# leaves. A child whose zygote has died refuses its call, running nothing,
# with the record {"orphaned": true}.
import sys


def _nexa_prepare():
    # `python -c` puts the working directory first on sys.path (Python 3.11+
    # leaves it off with -P or PYTHONSAFEPATH, older ones always add it).
    # Take it off before anything is imported, for good: the working
    # directory is writable by sandboxed tools, so a file planted there
    # (csv.py, json.py) must never be imported by the bootstrap or by a
    # tool that runs outside the sandbox. This is what -P does, for every
    # interpreter version, without changing what child processes inherit.
    # Entries the user put on PYTHONPATH stay: those are explicit.
    if sys.path and sys.path[0] == "":
        sys.path.pop(0)

    import os

    # nexa starts the interpreter with PYTHONSAFEPATH set (when the user
    # had not set it) and the marker below: from Python 3.11 on the working
    # directory is then never on sys.path, not even during start-up, when
    # 3.13 already imports linecache for `-c`. What the tool and the
    # processes it starts inherit is the user's environment, without it.
    if os.environ.pop("NEXA_ADDED_PYTHONSAFEPATH", None) is not None:
        os.environ.pop("PYTHONSAFEPATH", None)
    import json
    import keyword
    import types
    import time
    import ast
    import linecache
    import traceback
    import importlib.util

    try:
        import fcntl
    except ImportError:
        pass


def _nexa_zygote():
    # The fork server. It returns only in a forked child, ready to run one
    # call exactly as a fresh `python3 -c BOOTSTRAP` would; the server
    # itself never returns. It never sees arguments, secrets, environment or
    # results: those travel on each child's own socket, straight from nexa.
    import os

    if sys.version_info < (3, 8):
        os._exit(3)  # nexa falls back to one interpreter per call
    before = set(sys.modules)
    import gc
    import json
    import select
    import _signal as signal  # signal's enum wrappers cost a child ~70 page faults
    import _socket as socket  # socket's Python wrappers cost the zygote page faults at every fork
    import binascii
    import ast
    import importlib
    import types
    import fcntl
    import atexit

    ctl = socket.socket(fileno=3)
    cfd = ctl.fileno()
    # Modules only the server needs leave sys.modules (the server keeps its
    # references): a call must import its own copy, as it would in a fresh
    # interpreter (a project file may shadow them).
    for name in [name for name in sys.modules if name not in before]:
        del sys.modules[name]
    sys.argv[:] = sys.argv[:1]

    def fds_open():
        try:
            return [int(n) for n in os.listdir("/proc/self/fd")]
        except (OSError, ValueError):
            return list(range(3, 1024))

    # Descriptors nexa inherited without close-on-exec are no business of
    # the server or of any call.
    for fd in fds_open():
        if fd > 3:
            try:
                os.close(fd)
            except OSError:
                pass

    # A call's stdin is /dev/null, as after a per-call interpreter has read
    # its request.
    null = os.open(os.devnull, os.O_RDONLY)
    if null != 0:
        os.dup2(null, 0)
        os.close(null)

    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    signal.set_wakeup_fd(wake_w)

    def send(data, fds=()):
        # data: the message's JSON, already encoded (json.dumps would run
        # the encoder's Python code, whose pages each fork makes the
        # zygote copy again).
        if fds:
            blob = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in fds)
            ctl.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, blob)])
        else:
            ctl.send(data)

    # The helpers every call uses, made once for all children.
    defs = _nexa_defs()

    # What exists now is the interpreter's; what a call adds is torn down
    # at its exit (_nexa_leave_fork).
    modules = set(sys.modules)
    main = set(vars(sys.modules["__main__"]))

    server = os.getpid()
    live = {}  # pid -> exit reported; pids stay unreaped until released
    released = set()

    def rehearse(sock):
        # Before its call is known, a spare child goes through what the
        # set-up and the end of every call do (decode a request, set the
        # call variables, compile and define a function, encode a record,
        # flush, receive a request with its descriptors, collect garbage)
        # on made-up data, so that the pages this touches are its own when
        # the call comes: after a fork, the first write to a page copies it
        # and the first run of a piece of the interpreter's machine code
        # maps its page again, and those page faults were most of what a
        # call's set-up cost. Nothing of it is kept, and no user code runs.
        # It stops as soon as a call is waiting: then it would only delay
        # it. What every call needs comes first, so that a call that comes
        # early (calls made back to back) finds that part done; the socket
        # part last, since it saves a call the least for what it costs.
        def waiting():
            try:
                return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) is not None
            except BlockingIOError:
                return False
            except OSError:
                return True

        if waiting():
            return
        sample = {"kind": "body", "source": "return [x]\n", "function": "nexa", "params": ["x"],
                  "arguments": {"x": "y"}, "secrets": {}, "environ": "", "cwd": "/"}
        raw = json.dumps(sample).encode("ascii")
        request = json.loads(raw.decode("utf-8"))
        for entry in binascii.a2b_base64(request["environ"].encode("ascii")).split(b"\0"):
            entry.partition(b"=")
        for key in (b"NEXA_IDEMPOTENCY_KEY", b"NEXA_RUN_ID", b"NEXA_CALL_ID"):
            if key not in os.environb:
                os.environb[key] = b""
                del os.environb[key]
        if waiting():
            return
        source = request["source"]
        source.splitlines(True)
        body = ast.parse(source, "<nexa>", "exec")
        tree = ast.parse("def nexa(x):\n    pass\n", "<nexa>", "exec")
        tree.body[0].body = body.body
        module = types.ModuleType("nexa")
        module.__dict__.update({"__file__": "<nexa>", "json": json})
        exec(compile(tree, "<nexa>", "exec", dont_inherit=True), module.__dict__)
        fn = module.__dict__.pop("nexa")
        fn.__name__ = fn.__qualname__ = "nexa"
        fn.__code__ = fn.__code__.replace(co_name="nexa")
        # The call's end goes through the bootstrap's own helpers (made
        # once, in the zygote), and it registers its module and source.
        (_, _, _, _, _, _, linecache, _, box, _, _, finish,
         unknown, secrets, is_unknown, _, render) = defs  # as _nexa_main names them
        sys.modules["__nexa_rehearsal__"] = module
        linecache.cache["<nexa>"] = (len(source), None, [source], "<nexa>")
        is_unknown(unknown())
        secrets({}).get("NEXA_CALL_ID")
        box[0] = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
        try:
            finish({"ok": True, "output": render(fn(**request["arguments"]))})
        finally:
            box[0] = -1
            del sys.modules["__nexa_rehearsal__"]
            del linecache.cache["<nexa>"]
        module.__dict__.clear()
        del module, fn
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        if waiting():
            return
        one, two = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            spare = os.dup(0)
            one.sendmsg([raw], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, spare.to_bytes(4, sys.byteorder, signed=True))])
            os.close(spare)
            one.shutdown(socket.SHUT_WR)
            data, anc, flags, _ = two.recvmsg(1 << 16, socket.CMSG_SPACE(2 * 4))
            for level, kind, blob in anc:
                for fd in memoryview(blob)[:len(blob) - len(blob) % 4].cast("i"):
                    os.dup2(fd, fd)
                    os.close(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 200))
                    os.close(fd)
            b"".join([data, two.recv(1 << 18)])
        finally:
            one.close()
            two.close()
        if waiting():
            return
        gc.collect()

    def claim(sock):
        # In a spare child: wait for a call. nexa sends its output pipe and
        # result channel (SCM_RIGHTS) with the first bytes of the request,
        # then the rest, then end of file. End of file before anything
        # means the spare is not wanted: leave, having run nothing.
        rehearse(sock)
        data, anc, flags, _ = sock.recvmsg(1 << 16, socket.CMSG_SPACE(2 * 4))
        if not data:
            os._exit(0)
        fds = []
        for level, kind, blob in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                usable = len(blob) - len(blob) % 4
                fds.extend(memoryview(blob)[:usable].cast("i"))
        if len(fds) != 2 or flags & socket.MSG_CTRUNC:
            os._exit(70)
        if os.getppid() != server:
            # The zygote is gone: nothing would keep this child unreaped
            # (its pid, and so its process group id, held) once it exits.
            # Run nothing; nexa runs the call elsewhere.
            os.write(fds[1], b'{"orphaned": true}\n')
            os._exit(0)
        chunks = [data]
        while True:
            data = sock.recv(1 << 18)
            if not data:
                break
            chunks.append(data)
        sock.close()
        os.dup2(fds[0], 1)
        os.dup2(fds[0], 2)
        os.close(fds[0])
        # The result channel goes straight to a high close-on-exec
        # descriptor (a per-call interpreter moves it there from fd 3).
        out = fcntl.fcntl(fds[1], fcntl.F_DUPFD_CLOEXEC, 200)
        os.close(fds[1])
        return b"".join(chunks), out

    def fork_spare():
        # Forks a spare child: a clean fork of this server, prepared as far
        # as it can be without knowing its call, waiting on a socket of its
        # own whose other end goes to nexa. Returns the call's context in
        # the child, else None.
        try:
            mine, nexas = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        except OSError as exc:
            send(json.dumps({"spare": 0, "error": "socketpair: %s" % (exc,)}).encode("ascii"))
            return None
        nexas_fd = nexas.fileno()
        try:
            pid = os.fork()
        except OSError as exc:
            mine.close()
            nexas.close()
            send(json.dumps({"spare": 0, "error": "fork: %s" % (exc,)}).encode("ascii"))
            return None
        if pid == 0:
            try:
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                # Their descriptors are closed below, not by the objects.
                ctl.detach()
                nexas.detach()
                live.clear()
                released.clear()
                os.setpgid(0, 0)
                # The server holds no other descriptor (it closed what it
                # inherited; its own are these).
                for fd in (cfd, wake_r, wake_w, nexas_fd):
                    os.close(fd)
                if len(sys.modules) != len(modules):
                    # The server imported something since it started.
                    for name in [name for name in sys.modules if name not in modules]:
                        del sys.modules[name]
                warm = {"a2b": binascii.a2b_base64, "modules": modules, "main": main,
                        "claim": lambda: claim(mine), "gc": gc, "atexit": atexit, "defs": defs}
            except BaseException:
                os._exit(70)
            return warm
        mine.close()
        try:
            # The child does it too; doing it here as well means the group
            # exists before nexa learns the pid.
            os.setpgid(pid, pid)
        except OSError:
            pass
        live[pid] = False
        try:
            send(b'{"spare": %d}' % pid, [nexas.fileno()])
        finally:
            nexas.close()
        return None

    def reap():
        # Reports each child's exit once, then reaps it once nexa has
        # released it (nexa releases only a child it knows has exited).
        for pid in list(live):
            if not live[pid]:
                try:
                    info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
                except ChildProcessError:
                    del live[pid]
                    released.discard(pid)
                    continue
                if info is None:
                    continue
                live[pid] = True
                if info.si_code == os.CLD_EXITED:
                    send(b'{"exited": %d, "code": %d}' % (pid, info.si_status))
                else:
                    send(b'{"exited": %d, "signal": %d}' % (pid, info.si_status))
            if pid in released:
                try:
                    os.waitpid(pid, 0)
                except ChildProcessError:
                    pass
                del live[pid]
                released.discard(pid)

    FORK = b'{"op":"fork"}'
    WARMUPS = 3
    RELEASE = b'{"op":"release","pid":'

    def serve():
        send(b'{"ready": true, "pid": %d}' % os.getpid())
        while True:
            try:
                ready = select.select([cfd, wake_r], [], [])[0]
            except InterruptedError:
                continue
            if wake_r in ready:
                try:
                    while os.read(wake_r, 512):
                        pass
                except OSError:
                    pass
            if cfd in ready:
                try:
                    data, anc, flags, _ = ctl.recvmsg(65536, socket.CMSG_SPACE(16 * 4))
                except InterruptedError:
                    continue
                if not data:
                    return None  # nexa closed the connection, or exited
                for level, kind, blob in anc:
                    # Nothing nexa sends here carries descriptors.
                    if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                        usable = len(blob) - len(blob) % 4
                        for fd in memoryview(blob)[:usable].cast("i"):
                            try:
                                os.close(fd)
                            except OSError:
                                pass
                # The two messages nexa sends, read without the decoder (its
                # Python code is more pages for the server to copy again
                # after every fork); anything else goes through it.
                if data == FORK:
                    msg, op = None, "fork"
                elif data.startswith(RELEASE) and data.endswith(b"}") and data[len(RELEASE):-1].isdigit():
                    msg, op = {"pid": int(data[len(RELEASE):-1])}, "release"
                else:
                    try:
                        msg = json.loads(data.decode("ascii"))
                        op = msg.get("op")
                    except (ValueError, AttributeError):
                        msg, op = {}, None
                if op == "fork":
                    child = fork_spare()
                    if child is not None:
                        return child
                elif op == "release":
                    pid = msg.get("pid")
                    if pid in live:
                        released.add(pid)
            reap()

    # The rehearsal, run here a few times on a socket nothing comes on: a
    # function's first runs write to memory that later runs leave alone
    # (Python 3.11 rewrites a function's bytecode as it warms up, and
    # fills caches), and a child that did it first would copy those pages.
    # Measured: ~45 fewer page faults a call; the first run gives most of
    # it (~0.8 ms each, at the zygote's start). No user code runs, and
    # nothing of it is kept (no module, variable or descriptor).
    one, two = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        for _ in range(WARMUPS):
            rehearse(two)
    except Exception:
        pass
    finally:
        one.close()
        two.close()
    # Import caches the server made must not hide files created since it
    # started. This only marks them stale, and nothing imports in the
    # server after this point, nor in a child before its call: every child
    # inherits them stale and reads them again at its call's first import.
    # (Done here once, after the rehearsal above, not in every child: it
    # touched 30-50 pages of each.)
    importlib.invalidate_caches()
    # In Python 3.10 and from 3.12 on, the first call imports
    # importlib.metadata, and that import reads again the caches of the
    # directories it searched: a second call only marks them. What the
    # first imported leaves sys.modules, as the server's own modules did.
    importlib.invalidate_caches()
    for name in [name for name in sys.modules if name not in modules]:
        del sys.modules[name]
    # Everything the server holds now is old to a child: frozen, the
    # collector of a child never walks (and so never copies) it, and a
    # child's exit collects only what its call made.
    gc.collect()
    gc.freeze()
    try:
        child = serve()
    except BaseException:
        child = None
    if child is not None:
        return child
    # nexa is gone, closed the executor or broke the protocol: nothing of
    # ours may keep running.
    for pid in live:
        try:
            os.killpg(pid, 9)
        except OSError:
            pass
    os._exit(0)


def _nexa_defs():
    # The bootstrap's own helpers, modules and classes. A per-call
    # interpreter makes them at its start; a zygote makes them once, before
    # it forks, so that a child does not build them again (new objects on
    # new pages were a good part of a child's preparation). A child gets
    # its own copy, as of every object of the zygote: what a call does to
    # them stays in its process.
    import os
    import json
    import keyword
    import types
    import time
    import ast
    import linecache
    import traceback
    import importlib
    import importlib.util

    out = [-1]  # the result channel, once known

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
            written = os.write(out[0], view)
            view = view[written:]

    def finish(record):
        try:
            emit(record)
        finally:
            try:
                os.close(out[0])
            except OSError:
                pass

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

    return (os, json, keyword, types, time, ast, linecache, importlib, out, close_inherited, emit, finish,
            ToolOutcomeUnknown, NexaSecrets, is_unknown, describe, render)


def _nexa_main(warm):
    (os, json, keyword, types, time, ast, linecache, importlib, out_box, close_inherited, emit, finish,
     ToolOutcomeUnknown, NexaSecrets, is_unknown, describe, render) = _nexa_defs() if warm is None else warm["defs"]
    out = -1  # the result channel

    if warm is not None:
        # A forked child: everything above ran before it was given a call.
        # Wait for one now; its request, and its result channel (already on
        # a high close-on-exec descriptor), come on the child's own socket.
        raw, out = warm.pop("claim")()
        out_box[0] = out
    else:
        # Move the result channel away from fd 3 so that user code that
        # opens files or spawns processes cannot write to it by accident.
        try:
            import fcntl

            out = fcntl.fcntl(3, fcntl.F_DUPFD, 200)
        except Exception:
            out = os.dup(3)
        os.set_inheritable(out, False)
        os.close(3)
        out_box[0] = out

    if sys.version_info < (3, 8):
        finish({"fatal": "Python 3.8 or newer is required, found %s" % (sys.version.split()[0],)})
        return 2

    try:
        if warm is None:  # a forked child's stdin is /dev/null already
            raw = sys.stdin.buffer.read()
            try:
                null = os.open(os.devnull, os.O_RDONLY)
                os.dup2(null, 0)
                os.close(null)
            except OSError:
                pass
        request = json.loads(raw.decode("utf-8"))
        if warm is not None:
            # A forked call: the zygote's environment is the one a fresh
            # interpreter would have started with, but for the call's own
            # variables; set them, and go to the working directory.
            environ = warm["a2b"](request["environ"].encode("ascii"))
            for entry in environ.split(b"\0"):
                key, sep, value = entry.partition(b"=")
                if sep and key:
                    os.environb[key] = value
            del environ
            cwd = request.get("cwd")
            if cwd:
                try:
                    os.chdir(cwd)
                except OSError as exc:
                    finish({"fatal": "working directory %s is not usable (%s)" % (cwd, exc.strerror or type(exc).__name__)})
                    return 2
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

    nexa_secrets = NexaSecrets(secrets)
    del secrets, request, raw

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
            # Loaded by path: neither the file's directory nor the
            # working directory goes on sys.path.
            emit({"event": "start"})
            started = True
            spec.loader.exec_module(module)
            fn = getattr(module, function, None)
            if not callable(fn):
                finish({"ok": False, "error": "python tool file %s has no function %s" % (source, function)})
                return 0
        if not started:
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


def _nexa_leave_fork(warm, rc):
    # A forked call leaves as a fresh interpreter's exit would, in the same
    # order: other threads are joined, atexit handlers run, the standard
    # streams are flushed, then what the call created is torn down (the
    # modules it imported, the names it added to __main__) and collected,
    # so that its objects are finalized: files it left open are flushed and
    # closed, temporary files removed, __del__ methods run. Then os._exit.
    # An ordinary exit would also tear down the whole interpreter inherited
    # from the zygote, which after a fork writes to (and so copies) nearly
    # every page of its heap: about 40 ms a call, against a few here.
    # gc and atexit come from the zygote: a fresh interpreter has not
    # imported them, so a call may not have either, and importing them here
    # would cost more than the rest of the exit.
    os = sys.modules["os"]
    gc = warm["gc"]

    try:
        threading = sys.modules.get("threading")
        if threading is not None:
            threading._shutdown()
    except BaseException:
        pass
    try:
        warm["atexit"]._run_exitfuncs()
    except BaseException:
        pass

    def flush():
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass

    flush()
    try:
        main = vars(sys.modules["__main__"])
        for name in [n for n in main if n not in warm["main"]]:
            main.pop(name, None)
        for name in [n for n in sys.modules if n not in warm["modules"]]:
            module = sys.modules.pop(name, None)
            namespace = getattr(module, "__dict__", None)
            del module
            if isinstance(namespace, dict):
                namespace.clear()
            del namespace
        gc.collect()
    except BaseException:
        pass
    flush()
    os._exit(rc)


_nexa_rc = 70
_nexa_warm = None
try:
    _nexa_prepare()
    if sys.argv[1:] == ["--nexa-zygote"]:
        _nexa_warm = _nexa_zygote()
    _nexa_rc = _nexa_main(_nexa_warm)
except BaseException:
    pass
if _nexa_warm is not None:
    _nexa_leave_fork(_nexa_warm, _nexa_rc)
try:
    sys.stdout.flush()
    sys.stderr.flush()
except Exception:
    pass
sys.exit(_nexa_rc)
