"""labbox runtime gate: a PEP 578 audit hook installed before the experiment's first line.

labbox binds this directory read-only into the sandbox and names it first on PYTHONPATH, so
the interpreter imports it as `sitecustomize` while `site` starts up, before `__main__` exists.
It installs the hook, takes its own directory out of sys.path again, and imports the
interpreter's own sitecustomize (Debian's, a venv's) so nothing else changes: __main__,
__file__, sys.argv and the experiment's imports are those of a run without the gate.

The hook refuses, as they happen, the capabilities the static check's hard gate refuses
(docs/check.md): process creation, sockets without --network, dynamic code that is not a file
of the experiment, native code (ctypes), pickle's find_class outside an allowlist, banned
imports, writes outside the output paths. A refusal raises PermissionError naming the rule.
Every event it refuses (or, when only recording, would refuse) is written as one JSON line to
the events file labbox bound for it; labbox reads it into result.json's runtime_gate.

What this can and cannot hold is written down in docs/decisions.md ("The runtime gate"): it
lives in the experiment's own process, so it is a layer with evidence, not the containment,
which stays the sandbox's (namespaces, seccomp, read-only file system).

Everything lives inside _labbox_gate() so the module's namespace keeps no handle on the
gate's state; the fast path of the hook is one frozenset lookup.
"""


class _GateNotIn(Exception):
    pass


def _labbox_gate():
    import sys
    import os
    import errno
    import _socket
    import _thread

    here = os.path.dirname(os.path.abspath(__file__))
    if not hasattr(sys, "addaudithook"):
        # Before Python 3.8 (PEP 578) there is no hook to install: nothing is said into the
        # experiment's output, and labbox, not hearing from the gate, does not claim it.
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
        return
    # The config is lines of "key hexbytes": read with str methods only, because json (and
    # the re, enum, collections it pulls in) would cost more than the rest of the start-up.
    cfg = {}
    outputs = []
    stdlib = []
    try:
        with open(os.path.join(here, "labbox_gate.cfg"), "rb") as f:
            lines = f.read().split(b"\n")
        if lines[0] != b"labbox-gate 1":
            raise ValueError("not labbox's config")
        for line in lines[1:]:
            k, _, v = line.partition(b" ")
            v = os.fsdecode(bytes.fromhex(v.decode("ascii")))
            if k == b"output":
                outputs.append(v)
            elif k == b"stdlib":
                stdlib.append(v)
            elif k:
                cfg[k.decode("ascii")] = v
    except (OSError, ValueError, IndexError) as e:
        # This file exists only where labbox put it, with its config beside it: an
        # interpreter that cannot read that (a limit, a rule the experiment left to the
        # processes it starts) would run without the gate, so it runs nothing.
        raise _GateNotIn("its config cannot be read: %s" % e)
    # Out of sys.path at once: the experiment's imports are those of a run without the gate.
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    # print() writes its text and its newline apart, and PYTHONUNBUFFERED makes each a write
    # of its own: processes printing into the run's one pipe (a Pool's workers) then join each
    # other's lines ("acc: 0.5acc: 0.6"), and those metrics are lost. Line buffering writes a
    # line at once, and still loses nothing a killed run printed but an unended line.
    try:
        if sys.stdout is not None and not sys.stdout.line_buffering:
            sys.stdout.reconfigure(line_buffering=True, write_through=False)
    except (AttributeError, ValueError, OSError):
        pass
    # The PYTHONPATH the run was given joins sys.path only at the end, once the hook and its
    # guards are in, where the interpreter would have put it (before the standard library):
    # labbox names this directory alone in PYTHONPATH, so that no module of a directory the
    # experiment can write (PYTHONPATH=. is common) shadows what the interpreter and the gate
    # import before that (encodings, _socket, sysconfig, threading). Each interpreter the run
    # starts does the same from the environment.
    # The interpreter labbox started has LABBOX_GATE_MAIN in its environment, and takes it
    # out before the experiment's first line: an interpreter the run starts itself (a helper
    # script by subprocess) is no main program, and its uncaught exception (which its parent
    # may well handle) does not decide the run.
    started_by_labbox = os.environ.pop("LABBOX_GATE_MAIN", None) == "1"
    extra = []
    for p in os.environ.get("LABBOX_GATE_PYTHONPATH", "").split(os.pathsep):
        p = os.path.abspath(p) if p else ""
        if p and p not in sys.path and p not in extra:
            extra.append(p)

    policy = cfg.get("policy", "standard")
    enforce = cfg.get("enforce", "1") == "1"
    network = cfg.get("network", "0") == "1"
    exp_dir = cfg.get("exp_dir", "")
    outputs = tuple(p.rstrip("/") for p in outputs if p.startswith("/"))
    max_events = int(cfg.get("max_events", "200"))
    max_line = int(cfg.get("max_line", "2048"))
    # When labbox had staged the experiment: a file changed since (ctime later) was written
    # by the run, and the check never read it
    staged_ns = int(cfg.get("staged_ns", "0"))
    # The experiment's directories the check did not read, by identity (dev, inode): a
    # rename or a marker removed at run time does not make them read
    unread_dirs = set()
    for d in cfg.get("unread_dirs", "").split(","):
        dev, _, ino = d.partition(":")
        if dev.isdigit() and ino.isdigit():
            unread_dirs.add((int(dev), int(ino)))
    strict = policy == "strict"
    check_ran = policy != "permissive"  # the static check read the experiment's files

    fd = -1
    events_path = cfg.get("events", "")
    try:
        fd = os.open(events_path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
    except OSError:
        fd = -1
    # What the descriptor is: dup2 and close raise no audit event, and the experiment can
    # put /dev/null where the channel was (each record checks, see channel_fd).
    chan = {"fd": fd, "id": None, "lost": False, "tampered": False}
    if fd >= 0:
        try:
            _st = os.fstat(fd)
            chan["id"] = (_st.st_dev, _st.st_ino)
        except OSError:
            pass

    # ---- the gate's own tools ----------------------------------------------------------------
    # The gate never runs code of the experiment's while it judges: such code would run with
    # the thread marked busy, and from its frames (f_back, f_locals, f_globals: no audit
    # event) it would reach the gate's state. So what the gate calls at judging time is
    # captured here, before the experiment's first line, as C functions: a module's attribute
    # (os.path.realpath, os.stat, sys.modules.get) or a builtin is the experiment's to
    # replace (`posixpath.realpath = f`, `builtins.any = f`), and the gate itself runs with a
    # private copy of the builtins (the module's end). Dicts the experiment can fill
    # (sys.modules, a module's namespace, a frame's globals, a spec's __dict__) are read by
    # scanning (sget), never by hashing: a key of its own whose hash equals the name looked
    # up has its __eq__ called by the lookup.
    import posix as _px
    import _operator
    _getcwd, _readlink, _lstat, _stat_fn = _px.getcwd, _px.readlink, _px.lstat, _px.stat
    _statvfs, _write, _getpid = _px.statvfs, _px.write, _px.getpid
    _first = _operator.itemgetter(0)
    _ModuleType = type(sys)
    _module_dict = _ModuleType.__dict__["__dict__"].__get__
    _modules = sys.modules
    _dict_items, _dict_values = dict.items, dict.values
    _environ_data = os.environ._data  # the dict os.environ and os.environb keep (bytes)
    fs_encoding = sys.getfilesystemencoding()

    class _Tampered(Exception):
        """A dict the gate reads holds a key that passes for the name it looks for: a
        judging the gate cannot make, so the event is refused (dispatch fails closed)."""

    # Snapshots of containers the experiment can change from another thread while the gate
    # judges (sys.modules, a module's namespace, a frame's globals or locals). Dropped in the
    # gate's frames, one could hold the last reference to an object of the experiment's,
    # whose __del__ or weakref callback would then run inside the gate, find its frames
    # through f_back and read their locals (the handlers, the channel): the collector is off
    # while the gate judges, but reference counting frees at once. So each snapshot is kept
    # here, and the hook drops them once the gate has returned, in a frame of its own that
    # holds no link to the gate's state (make_hook).
    graves = {}  # thread -> the snapshots it took
    graves_out = {}  # thread -> those its outermost judging handed to the hook to drop
    _tid = _thread.get_ident

    def kept(x):
        """x, kept until the hook has returned from the gate on this thread."""
        g = graves.get(_tid())
        if g is None:
            g = graves[_tid()] = []
        g.append(x)
        return x

    def sget(d, key):
        """d[key] (None when absent) for an exact dict and an exact str key, found without
        hashing or comparing any key the experiment put there: each key is compared by str's
        own __eq__ (bound to key, so no reflected comparison), over one snapshot."""
        if type(d) is not dict:
            return None
        return sget_items(kept(list(_dict_items(d))), key)

    def sget_items(items, key):
        """sget over a list of (key, value) pairs, taken in one call."""
        hits = list(map(key.__eq__, map(_first, items)))
        n = hits.count(True)
        if n == 0:
            return None
        i = hits.index(True)
        if n > 1 or type(items[i][0]) is not str:
            raise _Tampered(key)
        return items[i][1]

    def str_keys(d):
        """Whether every key of d (a dict or a class's mappingproxy) is an exact str."""
        return set(map(type, kept(list(d)))) <= {str}

    def is_one(t, types):
        # `t in (a, b)` would call a metaclass's __eq__ (the reflected comparison)
        for x in types:
            if t is x:
                return True
        return False

    def p_split(p):
        i = p.rfind("/") + 1
        head, tail = p[:i], p[i:]
        if head and head != "/" * len(head):
            head = head.rstrip("/")
        return head, tail

    def p_norm(p):
        parts = []
        for c in p.split("/"):
            if c == "" or c == ".":
                continue
            if c == "..":
                if parts:
                    parts.pop()
                continue
            parts.append(c)
        return "/" + "/".join(parts)

    def p_abspath(p):
        return p_norm(p if p.startswith("/") else _getcwd() + "/" + p)

    def p_islink(p):
        try:
            return (_lstat(p).st_mode & 0o170000) == 0o120000
        except (OSError, ValueError):
            return False

    def p_exists(p):
        try:
            _stat_fn(p)
            return True
        except (OSError, ValueError):
            return False

    def p_realpath(p):
        """realpath(3) without strictness, as posixpath's: links resolved with lstat and
        readlink, a missing component and what follows it taken as written."""
        rest = (p if p.startswith("/") else _getcwd() + "/" + p).split("/")
        rest.reverse()
        done, hops = "", 0
        while rest:
            c = rest.pop()
            if c == "" or c == ".":
                continue
            if c == "..":
                done = done[:done.rfind("/")] if done else ""
                continue
            nxt = done + "/" + c
            if hops <= 40 and p_islink(nxt):
                hops += 1
                try:
                    target = _readlink(nxt)
                except (OSError, ValueError):
                    done = nxt
                    continue
                if target.startswith("/"):
                    done = ""
                parts = target.split("/")
                parts.reverse()
                rest.extend(parts)
                continue
            done = nxt
        return done or "/"

    # Where code comes from: the interpreter's own read-only paths, as sys.path has them
    # before the experiment's directory is added, minus anything the run can write.
    def _under(p, roots):
        for r in roots:
            if p == r or p.startswith(r + "/"):
                return True
        return False

    writable = outputs + ((exp_dir,) if exp_dir else ())
    lib_roots, std_roots = [], []
    # sysconfig's answer, asked once per interpreter by labbox's probe when it could (importing
    # sysconfig here costs every run a few ms), and trusted only for the interpreter and
    # setting it was asked of: PYTHONHOME, PYTHONPLATLIBDIR or another interpreter started
    # by the run move the library, and then sysconfig is asked here, as it always was.
    try:
        here_for = repr((sys.base_prefix, sys.base_exec_prefix, getattr(sys, "platlibdir", ""),
                         tuple(sys.version_info[:2]), sys.implementation.name))
    except Exception:
        here_for = None
    std_named = set(stdlib) if stdlib and cfg.get("stdlib_for") == here_for else set()
    if not std_named:
        import sysconfig
        for key in ("stdlib", "platstdlib"):
            for scheme_vars in ({}, {"base": sys.base_prefix, "platbase": sys.base_prefix}):
                try:
                    std_named.add(sysconfig.get_path(key, vars=scheme_vars or None))
                except (KeyError, TypeError):
                    pass
    for p in extra + sys.path:
        # A root the run could write to is not the interpreter's: exp/ never, and anything
        # else only when it is read-only here (a venv under /tmp is bound read-only over the
        # private /tmp; access() says EROFS for it).
        if not p or not os.path.isabs(p) or (exp_dir and _under(p, (exp_dir,))):
            continue
        try:
            if os.access(p, os.W_OK):
                continue
        except (OSError, ValueError):
            continue
        p = p.rstrip("/")
        if "-packages" in p.rsplit("/", 1)[-1] or p.endswith("-packages"):
            lib_roots.append(p)
        elif p in std_named or p.endswith(".zip") or p.endswith("lib-dynload"):
            std_roots.append(p)
        else:
            lib_roots.append(p)  # a PYTHONPATH entry the user gave, read-only: a library
    lib_roots = tuple(sorted(lib_roots, key=len, reverse=True))
    std_roots = tuple(sorted(std_roots, key=len, reverse=True))
    trusted_roots = lib_roots + std_roots
    # co_filename -> 's' stdlib, 'l' library, 'x' the experiment's (or unknown); this file
    # is the gate's, so its own calls are the standard library's.
    kinds = {__file__: "s"}

    def kind(fn):
        # The type first: a str subclass with its own __hash__ and __eq__ would find another
        # file's entry in kinds (a library's), and its startswith would say what it likes.
        if type(fn) is not str:
            return "x"
        k = kinds.get(fn)
        if k is None:
            if fn.startswith("<frozen "):
                # The frozen modules' own names only: a relative sys.path entry spelt
                # "<frozen x>.zip" gives its files names that start the same way.
                k = "s" if fn.endswith(">") and "/" not in fn and " " not in fn[8:] else "x"
            elif "/./" in fn or "/../" in fn or "//" in fn or fn.endswith(("/.", "/..")):
                # A path the interpreter would not have made from its own sys.path
                # ("/usr/lib/python3/dist-packages/../../../tmp/x.py"): a prefix proves nothing.
                k = "x"
            elif exp_dir and _under(fn, (exp_dir,)):
                k = "x"
            elif _under(fn, lib_roots):
                k = "l"
            elif _under(fn, std_roots):
                k = "s"
            else:
                k = "x"  # <string>, /tmp, anything the run could have written
            if len(kinds) < 50000:
                kinds[fn] = k
        return k

    # Standard-library files that only pass a call on (import_module, resolve_name): an
    # import through them is the caller's.
    passthrough = tuple(r + s for r in std_roots for s in ("/importlib/__init__.py", "/pkgutil.py"))

    # A frame is trusted by the file its code names only when it runs with that module's
    # own globals: types.FunctionType(a_library_function.__code__, {...}) makes a frame of
    # the library's code whose every global (what it calls, what it imports through
    # __builtins__) is the experiment's choice.
    gate_globals = globals()
    genuine = {id(gate_globals): gate_globals}  # module dicts seen to be one (the gate's too)

    def genuine_frame(f):
        g = f.f_globals
        if genuine.get(id(g)) is g:
            return True
        if type(g) is not dict or g is world:
            return False
        n = len(_modules)
        seen = not_genuine.get(id(g))
        if seen is not None and seen[0] is g and seen[1] == n:
            return False  # no module's when last looked, and no module came or went since
        # Every module's namespace, by identity: no key of g or of sys.modules is hashed or
        # compared (an experiment's key colliding with "__name__" had its __eq__ run here).
        # Those seen are kept, so a module's dict is looked for once.
        found = False
        for m in kept(list(_dict_values(_modules))):
            if issubclass(type(m), _ModuleType):
                d = _module_dict(m)
                if d is g:
                    found = True
                if type(d) is dict and len(genuine) < 8192:
                    genuine[id(d)] = d
        if not found and len(not_genuine) < 4096:
            not_genuine[id(g)] = (g, n)
        return found

    not_genuine = {}
    # The lines where multiprocessing's own readers load a pickle (ipc_mark): what such a
    # load calls (a pickle's REDUCE of what getattr found, a function it named) is called
    # from that line, and it is judged as the experiment's code, which wrote the pickle.
    ipc_sites = {}

    def fkind_raw(f):
        """kind() of the frame's code, "x" when the frame runs with globals that are no
        module's."""
        k = kind(f.f_code.co_filename)
        if k != "x" and not genuine_frame(f):
            return "x"
        return k

    def in_marked_load(f):
        """Whether f runs inside a load at a marked line: anything that load calls, however
        deep (a pool's mapstar or torch's _rebuild_from_type handed what the pickle chose),
        is the pickle's doing."""
        while f is not None:
            fn = f.f_code.co_filename
            lines = _dict_get(ipc_sites, fn) if type(fn) is str else None
            if lines is not None and f.f_lineno in lines:
                return True
            f = f.f_back
        return False

    def fkind(f):
        k = fkind_raw(f)
        if k != "x" and ipc_sites and in_marked_load(f):
            return "x"
        return k

    def origin(f):
        """The innermost frame that is not the standard library's: the standard library is
        full of helpers that call what they are given (threading, argparse's type=,
        concurrent.futures), so it decides nothing. None: only the standard library is on the
        stack (a thread of the experiment's), which counts as the experiment."""
        if ipc_sites and f is not None and in_marked_load(f):
            return "x", f
        while f is not None:
            # the gate's stand-ins (world) pass a call on, as the standard library's do
            k = "s" if f.f_globals is world else fkind_raw(f)
            if k != "s":
                return k, f
            f = f.f_back
        return "x", None

    # ---- library frames that call what they were handed --------------------------------------
    # A library frame decides for what it does itself (torch importing ctypes, numpy calling
    # its own functions). One that calls a callable the experiment handed it (np.vectorize(f),
    # a tree map, an apply) decides nothing: the call is the experiment's, as a standard
    # library helper's is. The callee is known by its frame (a Python function of the standard
    # library's or the experiment's, the frame right inside the library's) or, for a builtin
    # with no frame, by what it is: a maker of code or of imports, getattr (ctypes' symbols
    # are attributes), a ctypes function. It is held in the library frame's own locals, as the
    # argument it was handed (unwrapped from partials and bound methods).
    import _functools
    _partial_t = _functools.partial
    _partial_func = _partial_t.__dict__["func"].__get__
    c_sinks = (exec, eval, compile, __import__, getattr)
    _BuiltinType = type(len)
    _bound_t = type((lambda: 0).__get__(0))
    _method_func = _bound_t.__dict__["__func__"].__get__
    # ... and the wrappers that call what they hold: staticmethod and classmethod objects
    # (callable since 3.10), a slot's method-wrapper (partial(f).__call__)
    _wrapped_func = {staticmethod: staticmethod.__dict__["__func__"].__get__,
                     classmethod: classmethod.__dict__["__func__"].__get__}
    _mwrap_t = type([].__len__)
    _wrapped_func[_mwrap_t] = _mwrap_t.__dict__["__self__"].__get__

    def callee_held(L, inner):
        target = inner.f_code if inner is not None else None
        fl = L.f_locals
        try:
            vals = kept(list(dict.values(fl)) if type(fl) is dict else
                        [v for _, v in type(fl).items(fl)])
        except Exception:
            return False
        cfp = None
        if target is None:
            d = loaded_dict("_ctypes")
            cfp = sget(d, "CFuncPtr") if d is not None else None
        for v in vals[:64]:
            for _ in range(6):
                t = type(v)
                if t is _partial_t:
                    v = _partial_func(v)
                elif t is _bound_t:
                    v = _method_func(v)
                elif t is staticmethod or t is classmethod or t is _mwrap_t:
                    v = _wrapped_func[t](v)
                else:
                    break
            t = type(v)
            if target is not None:
                if t is _FunctionType:
                    if _func_code(v) is target:
                        return True
                    continue
                cls = v if issubclass(t, type) else t
                for name in ("__init__", "__new__", "__call__"):
                    try:
                        fn = _class_attr(cls, name)
                    except Exception:
                        fn = None
                    if type(fn) is _FunctionType and _func_code(fn) is target:
                        return True
            else:
                if t is _BuiltinType:
                    for s in c_sinks:
                        if v is s:
                            return True
                elif type(cfp) is type and cfp in type.__dict__["__mro__"].__get__(t):
                    return True
        return False

    def handed_in(frame):
        """Whether the innermost library frame on the way out calls what it was handed, with
        the experiment's code further out, or with no frame of the experiment's on the stack
        at all: then the event is the experiment's doing. A stack with none is a thread the
        run started (threading.Thread(target=np.vectorize(exec)), or one a pickle's data
        started on multiprocessing's pipes), an atexit call or a finalizer: no library
        decided to call what it holds there either."""
        f, inner, seen = frame, None, False
        while f is not None:
            k = "s" if f.f_globals is world else fkind_raw(f)
            if k == "x":
                return seen
            if k == "l" and not seen:
                if inner is not None and fkind_raw(inner) == "l":
                    return False  # a library function the library calls: its own doing
                if not callee_held(f, inner):
                    return False
                seen = True
            inner = f
            f = f.f_back
        return seen

    def exp_frame(f):
        """The innermost frame in the experiment's code, for the record."""
        first = None
        while f is not None:
            fn = f.f_code.co_filename
            if type(fn) is not str:
                fn = summary(fn)  # a str subclass would hash itself in record's seen set
            if kind(fn) == "x":
                if exp_dir and fn.startswith(exp_dir + "/"):
                    return fn, f.f_lineno
                if first is None:
                    first = (fn, f.f_lineno)
            f = f.f_back
        return first if first else (None, None)

    _name_of = type.__dict__["__name__"].__get__
    _CodeType = type((lambda: 0).__code__)
    _FunctionType = type(lambda: 0)
    _func_code = _FunctionType.__dict__["__code__"].__get__

    def summary(v, depth=0):
        # Never calls the experiment's code: only exact built-in types are shown.
        t = type(v)
        if t is str:
            return v if len(v) <= 300 else v[:300] + "..."
        if t is bytes:
            s = v[:200].decode("utf-8", "replace")
            return s + ("..." if len(v) > 200 else "")
        if t is int or t is float or t is bool or v is None:
            return v
        if (t is tuple or t is list) and depth < 2:
            out = [summary(x, depth + 1) for x in v[:8]]
            if len(v) > 8:
                out.append("...")
            return out
        try:
            return "<" + _name_of(t) + ">"
        except Exception:
            return "<object>"

    # JSON of what record() writes (str, int, float, bool, None, lists, a dict of those),
    # ASCII only. Not json: imported at the first event it would run the experiment's
    # json.py when there is one beside main.py, and at start-up it costs too much.
    def jstr(s):
        out = ['"']
        for ch in s:
            o = ord(ch)
            if ch == '"' or ch == "\\":
                out.append("\\" + ch)
            elif 0x20 <= o < 0x7F:
                out.append(ch)
            elif o > 0xFFFF:
                o -= 0x10000
                out.append("\\u%04x\\u%04x" % (0xD800 | (o >> 10), 0xDC00 | (o & 0x3FF)))
            else:
                out.append("\\u%04x" % o)
        out.append('"')
        return "".join(out)

    def to_json(v):
        t = type(v)
        if v is None:
            return "null"
        if t is bool:
            return "true" if v else "false"
        if t is int:
            return int.__repr__(v)
        if t is float:
            return float.__repr__(v) if v - v == 0 else '"NaN"'
        if t is str:
            return jstr(v)
        if t is list or t is tuple:
            return "[" + ", ".join([to_json(x) for x in v]) + "]"
        if t is dict:
            return "{" + ", ".join([jstr(k) + ": " + to_json(x) for k, x in v.items()]) + "}"
        raise TypeError("not JSON")

    state = {"n": 0, "dropped": 0, "seen": set(), "firsts": set()}
    busy = {}  # thread -> how deep the gate is in judging on it
    printing = []  # the code of the gate's exception hooks, once they are made

    def printing_frame(f):
        """A frame of the gate's exception hooks, which call the interpreter's printer."""
        code = f.f_code
        return f.f_globals is world and any(code is c for c in printing)

    _fstat, _open_fd = _px.fstat, _px.open
    _O_APPEND = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC

    def channel_fd():
        """The events channel's descriptor, checked to be the file it was (dev, inode); when
        the experiment has put something else there, the file is opened again by its path
        and the tampering said in it. -1 when it cannot be: then the gate refuses every
        event it judges (dispatch), having no record to keep."""
        f = chan["fd"]
        if f < 0 or chan["lost"]:
            return -1
        try:
            st = _fstat(f)
            if (st.st_dev, st.st_ino) == chan["id"]:
                return f
        except OSError:
            pass
        return channel_reopen()

    # A channel that cannot be opened again (the descriptor closed and RLIMIT_NOFILE lowered
    # under it, so the open fails with EMFILE) would leave the rest of the run unrecorded: a
    # refusal the code catches, the main program's uncaught exception, all gone from
    # result.json while it read "channel: read". The gate stops the interpreter instead, as it
    # does when it cannot install: the run fails, and says why on stderr.
    _exit_now = _px._exit

    def stop_unrecorded(why):
        try:
            _write(2, ("\nlabbox runtime gate: its channel was closed and cannot be opened "
                       "again (%s); the interpreter stops rather than run unrecorded\n"
                       % why).encode("ascii", "replace"))
        except (OSError, ValueError):
            pass
        _exit_now(126)

    def channel_reopen():
        chan["lost"] = chan["tampered"] = True
        try:
            nf = _open_fd(events_path, _O_APPEND)
            st = _fstat(nf)
            if (st.st_dev, st.st_ino) != chan["id"]:
                stop_unrecorded("another file is at its path")
        except OSError as e:
            stop_unrecorded(_px.strerror(e.errno) if type(e.errno) is int else "an error")
        chan["fd"], chan["lost"] = nf, False
        try:
            _write(nf, b'\n{"v": 1, "gate": "channel tampered"}\n')
        except OSError:
            pass
        return nf

    def record(event, args, refused, rule, title, frame, detail=None, at=None):
        if chan["fd"] < 0:
            return
        fn, line = at if at is not None else exp_frame(frame)
        key = (event, rule, fn, line, refused)
        if key in state["seen"]:
            return
        first = (event, rule, refused)
        if state["n"] >= max_events and first in state["firsts"]:
            # Past the cap only the first of each kind is kept: a flood of one event
            # (sys.audit raises any) must not hide another. The drop is said once.
            state["dropped"] += 1
            if state["dropped"] == 1:
                emit(b'\n{"v": 1, "gate": "dropped"}\n')
            return
        state["seen"].add(key)
        state["firsts"].add(first)
        state["n"] += 1
        doc = {"v": 1, "pid": _getpid(), "event": event,
               "args": [summary(a) for a in args[:6]], "refused": refused,
               "rule": rule, "title": title, "file": fn, "line": line}
        if detail:
            doc["detail"] = detail
        try:
            text = to_json(doc)
        except (TypeError, ValueError):
            return
        # Shortened field by field, never cut: labbox counts a line that is not whole JSON
        # as written by the experiment (to_json writes ASCII, so a char is a byte)
        for field, keep in (("args", None), ("detail", 200), ("file", 300), ("title", 60)):
            if len(text) <= max_line - 1:
                break
            v = doc.get(field)
            if field == "args":
                doc["args"] = ["(too long)"]
            elif type(v) is str and len(v) > keep:
                doc[field] = "..." + v[-keep:] if field == "file" else v[:keep] + "..."
            text = to_json(doc)
        if len(text) > max_line - 1:
            return
        emit(("\n" + text + "\n").encode())

    def emit(line):
        """One line into the channel, checked to be the channel first. Each line is one
        write of at most max_line + 1 bytes, so the pipe takes it whole (PIPE_BUF), and
        starts with a newline: a part line the experiment wrote through the descriptor it
        can reach ends there, and cannot swallow the gate's (labbox counts it as foreign).
        A write that fails means the descriptor is the file's but no longer one the gate can
        write (closed and opened again O_PATH or read-only): it is opened again as a
        replaced one is, and the line written there."""
        f = channel_fd()
        if f >= 0:
            try:
                _write(f, line)
                return
            except OSError:
                pass
            f = channel_reopen()
            if f >= 0:
                try:
                    _write(f, line)
                except OSError:
                    pass

    class _Refusal(Exception):
        pass

    def refuse(event, args, frame, rule, title, detail=None):
        record(event, args, enforce, rule, title, frame, detail)
        if enforce:
            raise PermissionError(
                errno.EPERM,
                "labbox runtime gate refused %s: %s %s (policy %s)%s"
                % (event, rule, title, policy, "; " + detail if detail else ""))

    # ---- writes outside the output paths --------------------------------------------------
    devices_ok = ("/dev/null", "/dev/zero", "/dev/full", "/dev/stdout", "/dev/stderr",
                  "/dev/tty", "/dev/urandom", "/dev/random")
    W = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC

    _bytes_item = bytes.__getitem__
    _all = slice(None)

    def as_text(p):
        """The path an event names, or None. Runs no code of the experiment's: the gate is
        busy for this thread while it judges (what the experiment ran here would not be
        judged), and its frames, seen from such code through f_back, hold its state. So no
        isinstance (a __class__ property), no str() or ==, no attribute of the type: a str
        or bytes subclass is copied by str's and bytes' own C code, anything else is None
        (the interpreter's events name paths already converted; sqlite3.connect's stand-in
        converts its database before the event)."""
        t = type(p)
        if t is str:
            return p
        if t is bytes:
            return bytes.decode(p, fs_encoding, "surrogateescape")
        if issubclass(t, str):
            return str.__str__(p)
        if issubclass(t, bytes):
            return bytes.decode(_bytes_item(p, _all), fs_encoding, "surrogateescape")
        return None

    def resolve(p, dir_fd=None):
        if not p.startswith("/"):
            base = _getcwd() if dir_fd is None else _readlink("/proc/self/fd/%d" % dir_fd)
            p = base + "/" + p
        d, b = p_split(p)
        rd = p_realpath(d or "/")
        full = (rd.rstrip("/") + "/" + b) if b else rd
        if p_islink(full):
            full = p_realpath(full)
        return full

    def outside(path, dir_fd=None):
        """The resolved destination when it lies outside the output paths, else None."""
        if type(path) is int:
            return None  # a descriptor already open
        p = as_text(path)
        if p is None:
            return "(a path object labbox cannot read without running its code)"
        try:
            full = resolve(p, dir_fd if type(dir_fd) is int else None)
        except (OSError, ValueError):
            full = p
        if full in devices_ok or full.startswith("/dev/fd/") or full.startswith("/dev/pts/"):
            return None
        if _under(full, writable):
            return None
        return full

    def check_write(event, args, frame, path, dir_fd=None):
        where = outside(path, dir_fd)
        if where is not None:
            refuse(event, args, frame, "LB110", "write outside the output paths",
                   "destination " + where)

    # The experiment's .py files read as text, the most recent last: exec(open("config.py")
    # .read()) (nanoGPT's configurator) runs a file of the experiment, as an import would
    py_reads = []

    def note_py_read(path):
        if not exp_dir or type(path) is not str or not path.endswith(".py"):
            return
        if path.startswith("/") and not path.startswith(exp_dir + "/"):
            return  # the interpreter's and the libraries' sources: no realpath for each
        try:
            full = resolve(path)
        except (OSError, ValueError):
            return
        if not full.startswith(exp_dir + "/"):
            return
        if full in py_reads:
            py_reads.remove(full)
        py_reads.append(full)
        if len(py_reads) > 16:
            del py_reads[0]

    def on_open(event, args, frame):
        path, mode, flags = (tuple(args) + (None, None, None))[:3]
        if frame is not None and frame.f_globals is gate_globals and type(path) is str and \
                path == events_path:
            return  # the gate opening its channel again (channel_fd)
        if type(mode) is str:
            if not any(c in mode for c in "wax+"):
                note_py_read(path)
                return
        elif type(flags) is int:
            if not flags & W:
                note_py_read(path)
                return
        else:
            return
        check_write(event, args, frame, path)

    def fd_arg(v):
        return v if type(v) is int and v >= 0 else None  # -1: no dir_fd (AT_FDCWD)

    def on_path1(event, args, frame):
        dir_fd = fd_arg(args[-1]) if len(args) >= 2 else None
        check_write(event, args, frame, args[0], dir_fd)

    def on_truncate(event, args, frame):
        check_write(event, args, frame, args[0])

    def on_rename(event, args, frame):
        check_write(event, args, frame, args[0], fd_arg(args[2]) if len(args) > 2 else None)
        check_write(event, args, frame, args[1], fd_arg(args[3]) if len(args) > 3 else None)

    def on_link(event, args, frame):
        check_write(event, args, frame, args[1], fd_arg(args[3]) if len(args) > 3 else None)

    # sqlite writes through its own open(), which no audit event sees: a connection may not
    # create a database outside the outputs, and ATTACH is checked by an authorizer set on
    # every connection as it is made.
    def on_sqlite_connect(event, args, frame):
        db = args[0] if args else None
        p = as_text(db)
        if p is None or p == ":memory:" or p == "" or p.startswith("file:"):
            if p and p.startswith("file:") and "mode=ro" not in p and "mode=memory" not in p:
                check_write(event, args, frame, p[5:].split("?", 1)[0])
            return
        try:
            exists = p_exists(p)
        except (OSError, ValueError):
            exists = False
        if not exists:
            check_write(event, args, frame, p)

    # ---- what the gate leaves in the experiment's reach --------------------------------------
    # The stand-ins put in modules (fork_exec, _imp's two, sqlite3.connect), the exception
    # hooks and the audit hook (whose frame a refusal's traceback holds) are made here with
    # globals of their own (`world`): a function's __globals__ and __closure__ are read with
    # no audit event, and the gate's globals or cells would hand over its state and its
    # builtins. They name no global and hold no cell; their links are keyword defaults,
    # whose read and write (audited) are refused for them. The real function is called from
    # the stand-in's frame, after the gate has judged and returned: whatever of the
    # experiment's that call runs (a factory, a __fspath__, an extension's init) finds no
    # frame of the gate's under it.
    # The interpreter's builtins, as any module's: C code the stand-ins call (an extension
    # module's init) asks the current frame for them. World functions name none.
    world = {"__builtins__": _module_dict(sys.modules["builtins"])}
    sealed_codes = {}  # id -> code of the functions made in the world

    def in_world(fn):
        code = fn.__code__
        if code.co_freevars:
            raise RuntimeError("labbox gate: %s closes over the gate" % fn.__name__)
        todo = [code]
        while todo:
            c = todo.pop()
            sealed_codes[id(c)] = c
            todo.extend(x for x in c.co_consts if type(x) is _CodeType)
        return _FunctionType(code, world, fn.__name__, fn.__defaults__)

    # A keyword default is replaced by any caller who names it (f(_judge=...)), so a world
    # function's privileged link and the links that guard its use are one default, a tuple:
    # a caller can replace them only all together, and then holds none of them.
    def make_sealed(impl, base):
        def sealed(a, k, *, _labbox_gate=(impl, base)):
            # a and k are handed over whole: unpacking k would hash its keys here.
            try:
                return True, _labbox_gate[0](a, k)
            except _labbox_gate[1] as e:
                e.__traceback__ = None
                e.__context__ = None
                e.__cause__ = None
                return False, e
        return sealed

    # A frame keeps its locals when it is left by an exception, and the exception's
    # traceback hands the frame to whoever catches it: every world function that holds a
    # link to the gate (or to a real function it stands in for) sets those locals to None
    # before an exception leaves it, whatever raised it (a refusal, a RecursionError at the
    # limit the experiment chose, a conversion).
    # The collector is off while a world frame holds a link: a finalizer (__del__, a weakref
    # callback) of the experiment's that a collection runs would find the frame through
    # f_back. The real function is then called with the link off the locals: taken from a
    # one-item list as the call is made (box.pop()), before anything of the experiment's
    # (the arguments' conversions, an extension's init importing through sys.meta_path)
    # can run. (No `:=`: the file must parse on interpreters without audit hooks, which
    # the gate then tells labbox it cannot guard.)
    # The collector is off while the gate judges (the hook, around dispatch) and while a world
    # function holds a link to it. gc.enable is any thread's to call, and no event names it:
    # another thread of the experiment's turning it on in between let a collection run a
    # finalizer inside the gate's frames. So the module's enable, disable and isenabled are
    # stand-ins that keep what the experiment asked for (state[0]) apart from the gate's holds
    # (state[1]: a count per thread): the collector runs only when the experiment wants it and
    # no thread holds it. One lock orders them (re-entrant: a signal handler's gc.enable may
    # come while the thread it interrupts holds it). A hold takes the lock and turns the
    # collector off before anything is allocated (an allocation may start a collection); a
    # free counts for the calling thread only, so one called from anywhere else (the
    # experiment can find it in a frame's locals) ends no other thread's hold.
    # Once the interpreter is finalizing, a daemon thread that wanted the GIL back stops for
    # good, and may hold the lock: then the collector is only turned off, with no lock (it
    # stays off). A fork takes the lock first (at_fork), so a child never starts with it held
    # by a thread it does not have; the child keeps its forking thread's holds alone.
    def make_gc_ctl(state, lock, real_disable, real_enable, ident, finalizing):
        def gc_hold(*, _g=(state, lock, real_disable, ident, finalizing)):
            if _g[4]():
                _g[2]()
                return
            _g[1].acquire()
            try:
                _g[2]()
                me = _g[3]()
                h = _g[0][1]
                h[me] = h.get(me, 0) + 1
            finally:
                _g[1].release()

        # Returns the holds the calling thread has left (0: its outermost ended; 1 once the
        # interpreter is finalizing, when nothing is counted).
        def gc_free(*, _g=(state, lock, real_enable, ident, finalizing)):
            if _g[4]():
                return 1
            _g[1].acquire()
            try:
                me = _g[3]()
                h = _g[0][1]
                n = h.get(me, 0)
                if n > 1:
                    h[me] = n - 1
                elif n == 1:
                    del h[me]
                    if not h and _g[0][0]:
                        _g[2]()
                return n - 1 if n > 1 else 0
            finally:
                _g[1].release()

        def enable(*, _g=(state, lock, real_enable, finalizing)):
            """Enable automatic garbage collection."""
            if _g[3]():
                _g[0][0] = True
                return
            _g[1].acquire()
            try:
                _g[0][0] = True
                if not _g[0][1]:
                    _g[2]()
            finally:
                _g[1].release()

        def disable(*, _g=(state, lock, real_disable, finalizing)):
            """Disable automatic garbage collection."""
            if _g[3]():
                _g[0][0] = False
                _g[2]()
                return
            _g[1].acquire()
            try:
                _g[0][0] = False
                _g[2]()
            finally:
                _g[1].release()

        def isenabled(*, _g=(state,)):
            """Returns true if automatic garbage collection is enabled."""
            return _g[0][0]

        def before_fork(*, _g=(lock,)):
            _g[0].acquire()

        def after_fork_parent(*, _g=(lock,)):
            _g[0].release()

        def after_fork_child(*, _g=(state, lock, real_enable, ident)):
            h = _g[0][1]
            mine = h.get(_g[3]())
            h.clear()
            if mine:
                h[_g[3]()] = mine
            elif _g[0][0]:
                _g[2]()
            _g[1].release()
        return (gc_hold, gc_free, enable, disable, isenabled, before_fork, after_fork_parent,
                after_fork_child)

    def make_standin(sealed, real, gc_ctl):
        def standin(*a, _l=(sealed, real, gc_ctl), **k):
            free = None
            try:
                _l[2][0]()
                free = _l[2][1]  # set once the hold is taken: what to end
                ok, r = _l[0](a, k)
                if not ok:
                    raise r
                box = [_l[1]]
                _l = None
            except BaseException:
                _l = None
                if free is not None:
                    free()
                raise
            free()
            return box.pop()(*r[0], **r[1])
        return standin

    def make_connect(real, set_auth, auth, fspath, exc):
        def connect(*a, _l=(real, set_auth, auth, fspath, exc), **k):
            try:
                # The real function is off the locals before anything of the experiment's
                # runs here (the database's __fspath__, a factory); what stays (rest) is
                # harmless to hand over: the authorizer is safe to call with anything. The
                # database is converted first; the connect's own audit event then carries
                # a str or bytes the gate judges.
                rest = (_l[1], _l[2], _l[3], _l[4])
                box = [_l[0]]
                _l = None
                con = box.pop()(
                    *(((rest[2](a[0]),) + a[1:]) if a else a),
                    **(dict(k, database=rest[2](k["database"])) if "database" in k else k))
            except BaseException:
                _l = box = None
                raise
            try:
                rest[0](con, rest[1])  # Connection's own method, not a subclass's
            except rest[3]:
                pass
            return con
        return connect

    # The authorizer is in the experiment's reach (a connect's frame names it), so it is
    # safe to call with anything: an action that is not a plain int is no ATTACH, and
    # nothing of the experiment's runs while it holds the gate's judge.
    def make_authorizer(judge, attach, ok, type_, int_, gc_ctl):
        def authorizer(action, a1, a2, dbname, source, *,
                       _l=(judge, attach, ok, type_, int_, gc_ctl)):
            free = None
            try:
                _l[5][0]()
                free = _l[5][1]  # set once the hold is taken: what to end
                if _l[3](action) is not _l[4] or action != _l[1]:
                    return _l[2]
                return _l[0](a1)
            finally:  # before any exception leaves, as on return
                _l = None
                if free is not None:
                    free()
        return authorizer

    def make_run(fn, args, box, lock, base):
        def run(*, _f=fn, _a=args, _box=box, _lock=lock, _base=base):
            try:
                _box.append((True, _f(*_a)))
            except _base as e:
                e.__traceback__ = None
                _box.append((False, e))
            finally:
                _lock.release()
        return run

    # What multiprocessing pickles bound methods with (getattr(obj, name)), of labbox's own:
    # the readers of its pipes refuse builtins.getattr, whose chains (len.__self__, then
    # __import__) reach anything and raise no event. This one hands back only a method of
    # the object's own class bound to the object, or a method of a class asked of that
    # class, and no dunder name but the operators'. It is in the experiment's reach (a
    # module's attribute, the pickler's table), so it holds no link to the gate: what it
    # closes over is what any code can take (getattr, type, sys.audit, descriptors' getters),
    # and a closure, unlike a keyword default, is not replaced by a caller (a pickle's
    # partial). A refusal is raised through an event of its own, which the gate judges by
    # this function's code and records.
    # An enum's member as Python 3.11 pickles it, getattr(cls, name): the one its class's
    # _member_map_ holds under that name. Shared by both getattrs below, made in the world
    # as they are, and closing over what they hand it.
    def make_enum_member(tools):
        def _labbox_enum_member(cls, name, r):
            mro_of, dict_of, type_, missing = tools
            mm = missing
            for c in mro_of(cls):
                mm = dict_of(c).get("_member_map_", missing)
                if mm is not missing:
                    break
            return type_(mm) is dict and mm.get(name, missing) is r
        return _labbox_enum_member

    def make_ipc_getattr(tools):
        def _labbox_getattr(obj, name):
            (getattr_, type_, str_, issubclass_, method_t, function_t, builtin_t, bound_slot_t,
             descr_ts, module_t, classmethod_t, mro_of, dict_of, ok_dunders, audit,
             missing, enum_member) = tools
            if type_(name) is not str_:
                raise TypeError("a method's name must be a str")
            what = "a dunder name"
            if name[:2] != "__" or name in ok_dunders:
                r = getattr_(obj, name)
                t = type_(r)
                is_class = issubclass_(type_(obj), type_)
                if t is method_t:
                    s, f = r.__self__, r.__func__
                    r = None
                    if s is obj and type_(f) is function_t:
                        for c in mro_of(obj if is_class else type_(obj)):
                            e = dict_of(c).get(name, missing)
                            if e is not missing:
                                if e is f or (is_class and type_(e) is classmethod_t and
                                              e.__func__ is f):
                                    return method_t(f, s)
                                break
                    what = "not a method of the object's class"
                elif t is builtin_t or t is bound_slot_t:
                    s = r.__self__
                    if s is obj and not issubclass_(type_(s), module_t):
                        return r
                    r = s = None
                    what = "not a method bound to the object"
                elif is_class and issubclass_(t, obj):
                    # an enum's member (Python 3.11's Enum pickles by getattr)
                    if enum_member(obj, name, r):
                        return r
                    r = None
                    what = "not a member of that class"
                elif t is descr_ts[0] or t is descr_ts[1] or t is descr_ts[2]:
                    if is_class:
                        oc = r.__objclass__
                        for c in mro_of(obj):
                            if c is oc:
                                return r
                    r = None
                    what = "not a method of that class"
                else:
                    r = None
                    what = "not a method"
            audit("labbox.ipc_getattr", type_(obj).__name__, name, what)
            return getattr_(obj, name)  # recording only: the gate let it pass
        return _labbox_getattr

    # What a pickle from outside (a checkpoint) gets for Python 2's __builtin__.getattr, which
    # torch.save (protocol 2) writes for what Python pickles by getattr: an LR scheduler's
    # state holds a bound method (OneCycleLR's anneal_func, CyclicLR's scale function), and
    # Python 3.11 pickles an enum's member as getattr(cls, name). _compat_pickle's table
    # renames the name to this one. It hands back an enum's member, or a method of the
    # object's own class (no dunder name); whose code the method is (torch.optim's or the
    # experiment's own pass) the gate judges by the event it raises, as for the pipes'. It
    # holds no link to the gate, for the same reasons as _labbox_getattr above.
    def make_file_getattr(tools):
        def _labbox_getattr(obj, name):
            (getattr_, type_, str_, issubclass_, method_t, function_t, mro_of, dict_of, audit,
             missing, enum_member) = tools
            if type_(name) is not str_ or name[:2] == "__":
                audit("labbox.file_getattr", type_(obj).__name__, "?", "a dunder name", None)
                return getattr_(obj, name)  # recording only: the gate let it pass
            r = getattr_(obj, name)
            if issubclass_(type_(obj), type_):
                what = "not a member of that class"
                if issubclass_(type_(r), obj) and enum_member(obj, name, r):
                    audit("labbox.file_getattr", obj.__name__, name, "member", None)
                    return r
                r = None
            elif type_(r) is method_t:
                s, f = r.__self__, r.__func__
                r = None
                what = "not a method of the object's class"
                if s is obj and type_(f) is function_t:
                    for c in mro_of(type_(obj)):
                        e = dict_of(c).get(name, missing)
                        if e is not missing:
                            if e is f:
                                audit("labbox.file_getattr", type_(obj).__name__, name, None, f)
                                return method_t(f, s)
                            break
                s = f = None
            else:
                r = None
                what = "not a method"
            audit("labbox.file_getattr", type_(obj).__name__, name, what, None)
            return getattr_(obj, name)  # recording only: the gate let it pass
        return _labbox_getattr

    # ... and an enum member, which Python 3.11 pickles as getattr(cls, name): the pickler's
    # reducer_override sends that with labbox's getattr (the member's own reduction decides
    # whether it is by name at all: a Flag's combination goes by value)
    def make_ipc_enum_override(g, getattr_, type_, modules_get):
        def reducer_override(self, obj):
            e = modules_get("enum")
            meta = getattr_(e, "EnumMeta", None) if e is not None else None
            if meta is None or not issubclass(type_(type_(obj)), meta):
                return NotImplemented
            r = obj.__reduce_ex__(4)
            if type_(r) is tuple and len(r) == 2 and r[0] is getattr_:
                return g, r[1]
            return NotImplemented
        return reducer_override

    def make_ipc_reducers(g, type_, issubclass_, module_t):
        def reduce_method(m):
            return g, (m.__self__, m.__func__.__name__)

        def reduce_builtin(m):
            s = m.__self__
            if s is None or issubclass_(type_(s), module_t):
                return m.__name__  # a module's function: by name, as pickle does
            return g, (s, m.__name__)

        def reduce_bound_slot(m):
            return g, (m.__self__, m.__name__)

        def reduce_descr(m):
            return g, (m.__objclass__, m.__name__)
        return reduce_method, reduce_builtin, reduce_bound_slot, reduce_descr

    def make_hook(w, d, gets, sets, type_, str_, pending, again, outbox, tid, hold, free):
        def hook(event, args, *, _w=w, _d=d, _g=gets, _s=sets, _type=type_, _str=str_,
                 _pend=pending, _again=again, _out=outbox, _tid=tid, _hold=hold, _free=free):
            if event in _w:
                # Whatever raises in here (sys.audit(name) with too few arguments, a
                # RecursionError at a limit the experiment chose, at the hold's call too)
                # leaves with _d cleared: the traceback hands this frame over.
                held = outer = False
                try:
                    # f_code, __code__, tb_frame: read by every traceback and logger; and a
                    # class's attribute name may be a str subclass, never hashed here
                    # (nothing is allocated before the hold: an allocation may start a
                    # collection)
                    if event == "object.__getattr__":
                        n = args[1]
                        if _type(n) is not _str or n not in _g:
                            return
                    elif event == "object.__setattr__":
                        n = args[1]
                        if _type(n) is not _str or n not in _s:
                            return
                    # no collection from here (box's list is an allocation) to the
                    # judging's end
                    _hold()
                    held = True
                    box = [_d]
                    _d = None
                    e = box.pop()(event, args)
                except BaseException:
                    _d = box = None
                    raise
                finally:
                    if held:
                        outer = not _free()
                # The snapshots the gate took (its kept()), handed over when its outermost
                # judging on this thread ended, are dropped here, once no frame of the
                # gate's is under this one: only by the outermost hook of the thread (no
                # hold of it left), never by a hook the gate's own judging raised (its own
                # open of a file): the outbox is in reach (this frame's locals), and what
                # the experiment puts there would be freed inside that judging.
                if outer:
                    t = _out.pop(_tid(), None)
                    t = None
                # Signals that came while a frame holding a link was on the stack are
                # theirs now. Those come before this call are raised once each: one
                # deferred again (this hook runs under a stand-in) waits for the next.
                if _pend:
                    sigs = _pend[:]
                    del _pend[:]
                    for s in sigs:
                        _again(s)
                if e is not None:
                    raise e
        return hook

    def make_strip(gatefile):
        def strip(tb, *, _file=gatefile):
            head = prev = None
            while tb is not None:
                if tb.tb_frame.f_code.co_filename != _file:
                    if prev is None:
                        head = tb
                    else:
                        prev.tb_next = tb
                    prev = tb
                tb = tb.tb_next
            if prev is not None:
                prev.tb_next = None
            return head
        return strip

    def make_excepthook(strip, orig, exc):
        def excepthook(t, v, tb, *, _strip=strip, _orig=orig, _exc=exc):
            try:
                tb = _strip(tb)
                e, i = v, 0
                while i < 16:
                    i += 1
                    e = e.__context__ if e is not None else None
                    if e is None:
                        break
                    e.__traceback__ = _strip(e.__traceback__)
            except _exc:
                pass
            return _orig(t, v, tb)
        return excepthook

    def make_thread_excepthook(strip, orig, args_t, exc):
        def thread_excepthook(a, *, _strip=strip, _orig=orig, _args=args_t, _exc=exc):
            try:
                a.exc_value.__traceback__ = _strip(a.exc_traceback)
                a = _args((a.exc_type, a.exc_value, a.exc_value.__traceback__, a.thread))
            except _exc:
                pass
            return _orig(a)
        return thread_excepthook

    # A Python signal handler runs wherever the interpreter is when it checks for signals:
    # inside the gate's own code too, and the frame it is handed (and its f_back) would be
    # the gate's. So the handlers the experiment installs are wrapped: one that arrives while
    # a frame of the gate's is on the stack is raised again, and runs once the gate is done.
    # Frames of the world's that hold no link (the signal wrapper, the exception hooks, the
    # audit hook once its link to the gate is gone) are the only ones a handler may be
    # handed; every other world frame (a stand-in's, the judge's sealed call) counts as the
    # gate's.
    def make_in_gate(gate_id, world_id, id_, safe, hook_code):
        def in_gate(frame, *, _gid=gate_id, _wid=world_id, _id=id_, _safe=safe,
                    _hook=hook_code):
            f = frame
            while f is not None:
                g = _id(f.f_globals)  # an id: this frame holds no link to the gate
                if g == _gid:
                    return True
                if g == _wid:
                    c = _id(f.f_code)
                    if c == _hook:
                        fl = f.f_locals
                        if fl.get("_d") is not None or fl.get("box"):
                            return True
                    elif c not in _safe:
                        return True
                f = f.f_back
            return False
        return in_gate

    def make_signal_wrap(handler, in_gate, pending):
        def labbox_signal_handler(sig, frame, *, _h=handler, _in=in_gate, _pend=pending):
            if _in(frame):
                _pend.append(sig)  # raised again by the hook, once the gate is done
                return None
            return _h(sig, frame)
        return labbox_signal_handler

    def make_signal_standins(real_signal, real_getsignal, wrap, originals, callable_,
                             in_gate, pending, id_, int_):
        # The numbers are made plain ints first (int's own conversion, never a subclass's
        # __index__ or __eq__), so the real function runs none of the experiment's code
        # under this frame.
        def signal(signalnum, handler, *, _l=(real_signal, wrap, originals, callable_, in_gate,
                                             pending, id_, int_)):
            try:
                real, wrap, orig, callable_, in_gate, pending, id_, int_ = _l
                _l = None
                signalnum = int_.__index__(signalnum)
                if callable_(handler):
                    w = wrap(handler, in_gate, pending)
                    orig[id_(w)] = (w, handler)
                    handler = w
                else:
                    handler = int_.__index__(handler)
                box = [real]
                real = None
                old = box.pop()(signalnum, handler)
            except BaseException:
                _l = real = wrap = orig = in_gate = pending = box = None
                raise
            got = orig.get(id_(old))
            return got[1] if got is not None and got[0] is old else old

        def getsignal(signalnum, *, _l=(real_getsignal, originals, id_, int_)):
            try:
                real, orig, id_, int_ = _l
                _l = None
                signalnum = int_.__index__(signalnum)
                box = [real]
                real = None
                old = box.pop()(signalnum)
            except BaseException:
                _l = real = orig = box = None
                raise
            got = orig.get(id_(old))
            return got[1] if got is not None and got[0] is old else old
        return signal, getsignal

    # What a forked child of the main program runs: faulthandler's SIGTERM dump is the main
    # program's alone (see where it is registered).
    def make_unregister(unregister, signum):
        def labbox_unregister():
            unregister(signum)
        return labbox_unregister

    w_unregister = in_world(make_unregister)

    (w_gc_ctl, w_sealed, w_standin, w_connect, w_authorizer, w_run, w_hook, w_strip,
     w_excepthook, w_thread_excepthook, w_in_gate, w_signal_wrap, w_signal_standins) = [
        in_world(f) for f in (
            make_gc_ctl, make_sealed, make_standin, make_connect, make_authorizer, make_run,
            make_hook, make_strip, make_excepthook, make_thread_excepthook, make_in_gate,
            make_signal_wrap, make_signal_standins)]

    def standin_for(impl, like):
        """A stand-in for like: impl(a, k) judges (raising the refusal) and returns the
        (args, kwargs) like is called with, or a checked copy of them."""
        st = w_standin(w_sealed(impl, BaseException), like, gc_ctl)
        st.__doc__ = getattr(like, "__doc__", None)
        st.__name__ = st.__qualname__ = getattr(like, "__name__", "standin")
        return st

    _start_thread, _new_lock = _thread.start_new_thread, _thread.allocate_lock

    def isolated(fn, args, timeout=120.0):
        """(ok, fn(*args) or what it raised), run on a thread of its own whose stack holds
        no frame of the gate's: for a call that may run code the experiment put in reach (an
        import runs the import system, whose finders and functions it can change). Its
        events are judged as any thread's."""
        box, lock = [], _new_lock()
        lock.acquire()
        _start_thread(w_run(fn, args, box, lock, BaseException), ())
        if not lock.acquire(True, timeout):
            raise _Tampered("a call the gate made did not return")
        return box[0]

    _import = __import__
    _fspath = _px.fspath

    def guard_sqlite():
        # Connection objects cannot be given an authorizer while the connect audit event
        # runs (they are not initialised yet), so sqlite3.connect itself is replaced as the
        # module is first imported, before sqlite3/dbapi2.py copies its names. The import
        # and the module's new attribute are made on a thread of their own.
        isolated(_import, ("_sqlite3",))
        m = sget(_modules, "_sqlite3")
        if not issubclass(type(m), _ModuleType):
            return
        d = _module_dict(m)
        fn = sget(d, "__file__")
        if type(fn) is not str or kind(fn) == "x":
            return  # not the interpreter's (a _sqlite3.py beside main.py): nothing to guard
        real, conn = sget(d, "connect"), sget(d, "Connection")
        codes = [sget(d, n) for n in ("SQLITE_DENY", "SQLITE_OK", "SQLITE_ATTACH")]
        if type(real) is not type(len) or type(conn) is not type or \
                any(type(c) is not int for c in codes):
            return
        set_auth = _class_attr(conn, "set_authorizer")
        if type(set_auth) is not type(str.join):
            return
        deny, ok, attach = codes
        standin = w_connect(real, set_auth,
                            w_authorizer(judge_attach(deny, ok), attach, ok, type, int, gc_ctl),
                            _fspath, Exception)
        standin.__doc__ = getattr(real, "__doc__", None)
        standin.__name__ = standin.__qualname__ = "connect"
        isolated(setattr, (m, "connect", standin))
        installed_guards.add("_sqlite3")

    def judge_attach(deny, ok):

        def judge(a1):
            try:
                if type(a1) is not str or not a1 or a1 == ":memory:":
                    return ok
                p = a1[5:].split("?", 1)[0] if a1.startswith("file:") else a1
                if p_exists(p):
                    return ok  # reading is the sandbox's business; it is read-only there
                where = outside(p)
                if where is None:
                    return ok
                record("sqlite3.attach", (a1,), enforce, "LB110",
                       "write outside the output paths", _getframe(2), "destination " + where)
                return deny if enforce else ok
            except BaseException:
                # Nothing raised here may reach sqlite, which hands it to the experiment's
                # unraisable hook with this frame in its traceback.
                return deny

        return judge

    # ---- process creation ---------------------------------------------------------------
    def on_process(event, args, frame):
        rule = "LB102" if event.startswith("subprocess") or event.startswith("_posix") else "LB101"
        title = "subprocess" if rule == "LB102" else "process creation"
        if event == "os.forkpty":
            rule, title = "LB107", "pseudo-terminals (pty)"
        refuse(event, args, frame, rule, title)

    def on_fork(event, args, frame):
        # multiprocessing pools and DataLoader workers fork; a forked child keeps this hook,
        # so it cannot exec either. The strict policy is the seed's word: no processes.
        if strict:
            refuse(event, args, frame, "LB101", "process creation (fork, under strict)")
        ipc_patch()  # the child then sends bound methods as its parent does

    # ---- the main program's end -------------------------------------------------------------
    # An exception that ends the main program reaches the interpreter's top level, which
    # raises the audit event sys.excepthook (hook, type, value, traceback) before it calls
    # whatever hook is installed, and before any atexit handler or finalizer runs: so the
    # experiment can neither keep the event from the gate (replacing or deleting
    # sys.excepthook changes only what is printed) nor undo it by exiting 0 afterwards
    # (os._exit in an atexit handler). It is recorded, not refused, as labbox.uncaught, and
    # labbox fails a run that has it whatever its exit status (docs/result-json.md).
    # Only the top level of the interpreter labbox started counts: no Python frame is on the
    # stack there (a library's PyErr_Print, or sys.audit raising the name, has the caller's),
    # on the thread that ran the gate (a thread's exception goes to threading.excepthook), in
    # the process that started it (a forked child keeps the hook and the pid it was started
    # with); multiprocessing's children run `-c` and the verdict of their exceptions is the
    # parent's. Forging it (writing the line into the channel) can only fail the run itself.
    _get_ident = _thread.get_ident
    main_pid, main_ident = _getpid(), _get_ident()
    main_program = started_by_labbox and \
        not (type(sys.argv) is list and sys.argv[:1] == ["-c"])
    try:
        raise ValueError
    except ValueError as _e:
        _TracebackType = type(_e.__traceback__)
    _tb_next = _TracebackType.__dict__["tb_next"].__get__
    _tb_frame = _TracebackType.__dict__["tb_frame"].__get__
    _tb_lineno = _TracebackType.__dict__["tb_lineno"].__get__
    _exc_args = BaseException.__dict__["args"].__get__
    _qualname_of = type.__dict__["__qualname__"].__get__
    gate_excepthook = []  # the gate's own sys.excepthook, once it is made (the module's end)

    def on_uncaught(event, args, frame):
        if frame is not None or not main_program or _getpid() != main_pid or \
                _get_ident() != main_ident or type(args) is not tuple or len(args) < 4:
            return
        hook, v, tb = args[0], args[2], args[3]
        t = type(v)
        if not issubclass(t, BaseException):
            name = "?"
        elif issubclass(t, SystemExit):
            return  # the interpreter exits with its code and calls no hook for it
        else:
            # as the traceback prints it: numpy's _ArrayMemoryError is named MemoryError
            name = _qualname_of(t)
        # Its message only when it is a plain str: str(v) would run the experiment's __str__
        msg = None
        if name != "?":
            a = _exc_args(v)
            if type(a) is tuple and len(a) >= 1 and type(a[0]) is str:
                msg = a[0] if len(a[0]) <= 200 else a[0][:200] + "..."
        # The innermost frame of the experiment's that it passed through, by the traceback
        # (the frame it ended in may be a library's)
        inner, any_x, i = None, None, 0
        while type(tb) is _TracebackType and i < 10000:
            i += 1
            f = _tb_frame(tb)
            fn = f.f_code.co_filename
            if type(fn) is str and kind(fn) == "x":
                any_x = (fn, _tb_lineno(tb))
                if exp_dir and fn.startswith(exp_dir + "/"):
                    inner = any_x
            tb = _tb_next(tb)
        at = inner or any_x or (None, None)
        detail = "the interpreter's sys.excepthook printed it" if gate_excepthook and \
            hook is gate_excepthook[0] else \
            "sys.excepthook was the experiment's own (or none): what it printed is its own"
        record("labbox.uncaught", (name, msg), False, "gate.uncaught",
               "the main program ended with an uncaught exception", None, detail, at)

    # ---- sockets ----------------------------------------------------------------------------
    _family = _socket.socket.family.__get__
    AF_UNIX = _socket.AF_UNIX

    def on_socket(event, args, frame):
        if network:
            return
        try:
            fam = _family(args[0])
        except Exception:
            fam = None
        if fam == AF_UNIX:
            return  # multiprocessing's own channels; the network namespace bounds them
        refuse(event, args[1:], frame, "LB105", "network access",
               "run with --network loopback or host to allow sockets")

    def on_socket_new(event, args, frame):
        # Before the sandbox's seccomp filter refuses the socket (EPERM), so the refusal
        # names the rule and the line; AF_UNIX stays (multiprocessing, DataLoader workers).
        if network:
            return
        fam = args[1] if len(args) > 1 else None
        if type(fam) is int and fam in (-1, AF_UNIX):
            return  # -1: from a descriptor (socket.fromfd), judged when it connects
        refuse(event, args[1:2], frame, "LB105", "network access",
               "run with --network loopback or host to allow sockets")

    def on_lookup(event, args, frame):
        # A host name looked up (what every download does first) fails in the sandbox's own
        # resolver, before any socket of Python's: recorded, not refused (the lookup fails by
        # itself and its error says so), so that labbox knows the run tried the network and
        # not only printed that it failed (--escalate network goes by what was recorded).
        if network:
            return
        record(event, args[:1], False, "LB105", "network access", frame,
               "a host name looked up; the sandbox has no network")

    # ---- dynamic code -------------------------------------------------------------------------
    def file_bytes(fn):
        """A regular file's bytes (16 MiB at most), or None."""
        try:
            st = _stat_fn(fn)
            if (st.st_mode & 0o170000) != 0o100000 or st.st_size > (16 << 20):
                return None
            with open(fn, "rb") as f:
                return f.read()
        except (OSError, ValueError):
            return None

    def same_as_file(fn, source):
        data = file_bytes(fn)
        if data is None:
            return False
        if type(source) is str:
            try:
                source = source.encode("utf-8")
            except UnicodeError:
                return False
        t = type(source)
        return (t is bytes or t is bytearray) and bytes(source) == data

    # A compile, exec or marshal.loads with no Python frame under it is called by the
    # interpreter itself or by a callback it runs for the experiment: a builtin passed to
    # _thread.start_new_thread or atexit.register, or mapped over in one, runs with no
    # frame, so the experiment's choice of arguments must not pass as the interpreter's.
    # The interpreter's own: the entry point's compile (python FILE, reading the file
    # itself; -c CODE), once, before any of the experiment's code runs; and, when it prints
    # a traceback with no Python frame (an unraisable exception, a thread started by a
    # builtin), the parse of a piece of a line for the carets under a call.
    # Python 3.8's compiler parses each f-string expression as a compile of its own, named
    # "<fstring>" (an AST, no code object): within the entry point's compile those come
    # from no frame too, right after it and before any frame runs ("fstring" below).
    entry = [True]
    fstring_parts = sys.version_info[:2] == (3, 8)

    def caret_parse(fn_text, source):
        """The traceback printer's shape: bytes, one piece of one line of the file named."""
        if type(source) is str:
            try:
                source = source.encode("utf-8")
            except UnicodeError:
                return False
        if type(source) is not bytes or not source or b"\n" in source or not fn_text:
            return False
        data = file_bytes(fn_text)
        return data is not None and source in data

    def on_frameless_compile(event, source, fn, fn_text):
        first, entry[0] = entry[0], False
        if first is True and kind(fn) == "x":
            if fstring_parts:
                entry[0] = "fstring"
            return  # the entry point's, named as the experiment's: judged as its code
        if first == "fstring" and fn_text == "<fstring>":
            entry[0] = "fstring"
            return  # an f-string of the entry point's, parsed within its compile
        if caret_parse(fn_text, source):
            # Nothing tells it from the same call made by the experiment's callback, so it
            # fails without a record (the printer draws the carets under the whole line
            # instead): a refusal recorded for a traceback would be a refusal never made.
            if enforce:
                raise PermissionError(errno.EPERM, "labbox runtime gate: compile from no "
                                      "Python frame")
            return
        refuse(event, (source, fn), None, "LB103", "dynamic code (eval, exec, compile)",
               "compile called from no Python frame, by a callback the interpreter ran "
               "(a thread's start, atexit), with the experiment's arguments")

    # The standard library's runners of code they are handed (a statement, a file, a
    # command): what they compile and run is the caller's, so their frames decide nothing,
    # unlike the library's helpers that compile code of their own making (namedtuple,
    # dataclasses). Reached however the experiment got the module (a callback's import of
    # it, its loader), timeit.Timer(stmt), code's runsource and runpy's run_path would
    # otherwise run any string as the standard library's own.
    runner_names = ("/timeit.py", "/code.py", "/codeop.py", "/runpy.py", "/bdb.py", "/pdb.py",
                    "/cProfile.py", "/profile.py", "/trace.py", "/doctest.py",
                    # ... and the callers of what they are handed, which compile nothing of
                    # their own: a thread's or a process's target, a pool's task, an executor's
                    # function, argparse's type=, a scheduled or finalising callback, a .pth
                    # line (site.addsitedir), a logging config's handler arguments. Handed
                    # exec, eval, compile or __import__ (a pickle can return them), they would
                    # run or import what the experiment chose as the standard library's act.
                    "/threading.py", "/concurrent/futures/thread.py",
                    "/concurrent/futures/process.py", "/multiprocessing/pool.py",
                    "/multiprocessing/process.py", "/argparse.py", "/sched.py", "/weakref.py",
                    "/asyncio/events.py", "/site.py", "/logging/config.py")
    runner_frozen = frozenset(["<frozen runpy>", "<frozen codeop>", "<frozen code>",
                               "<frozen site>"])

    # ... but timeit handed a callable (timeit.timeit(lambda: step(), number=100), the usual
    # way research code times a step) compiles only its own template around `_stmt()`: that
    # text, as CPython 3.6 to 3.13 write it, and the "pass" of the default setup pass.
    _tt = ("\ndef inner(_it, _timer{init}):\n    {setup}\n    _t0 = _timer()\n"
           "    for _i in _it:\n        {stmt}\n%s    _t1 = _timer()\n    return _t1 - _t0\n")
    _ts = [t.format(init=si + ti, setup=se, stmt=st)
           for t in (_tt % "        pass\n", _tt % "")
           for se, si in (("pass", ""), ("_setup()", ", _setup=_setup"))
           for st, ti in (("_stmt()", ", _stmt=_stmt"), ("pass", ""))] + ["pass", "pass\npass"]
    # compile's event carries the source as the bytes it was turned into
    timeit_sources = frozenset(_ts + [t.encode() for t in _ts])

    # typing and inspect evaluate annotations written as strings (ForwardRef, get_type_hints,
    # get_annotations(eval_str=True), signature(eval_str=True), singledispatch's register):
    # an annotation is a type expression, names, attributes, subscripts and literals, and
    # with no parenthesis, colon, '=' or '@' nothing in it calls anything but the dunders of
    # the objects it names. A string that is more is code the experiment handed them.
    annotation_readers = ("/typing.py", "/inspect.py", "/annotationlib.py")
    _type_chars = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                            "_.[], |'\"-")

    def annotation_frame(frame):
        fn = frame.f_code.co_filename
        return type(fn) is str and fn.endswith(annotation_readers) and kind(fn) == "s"

    def type_expression(source):
        if type(source) is bytes:
            try:
                source = source.decode("utf-8")
            except UnicodeDecodeError:
                return False
        if type(source) is not str or len(source) > 2000:
            return False
        for ch in source:
            if ch not in _type_chars:
                return False
        return True

    def timeit_frame(frame):
        fn = frame.f_code.co_filename
        return type(fn) is str and fn.endswith("/timeit.py") and kind(fn) == "s"

    _timeit_names = frozenset(["_it", "_timer", "_t0", "_t1", "_i", "_stmt", "_setup"])

    def timeit_shaped(code):
        # the module: `def inner(_it, _timer, _stmt=_stmt, _setup=_setup)` and no more
        for n in code.co_names:
            if type(n) is not str or n not in ("inner", "_stmt", "_setup"):
                return False
        inner = [c for c in code.co_consts if type(c) is _CodeType]
        if len(inner) != 1 or inner[0].co_name != "inner" or inner[0].co_names:
            return False
        for v in inner[0].co_varnames:
            if type(v) is not str or v not in _timeit_names:
                return False
        return True

    def timeit_template(frame, source):
        return (type(source) is str or type(source) is bytes) and source in timeit_sources \
            and timeit_frame(frame)

    def runner_call(f):
        """A runner's frame calling something, not its module's own top-level code (whose
        imports are the module's: logging.config's of socketserver)."""
        return runner_frame(f) and f.f_code.co_name != "<module>"

    def runner_frame(f):
        fn = f.f_code.co_filename
        if type(fn) is not str:
            return False
        if fn in runner_frozen:
            return True
        return fn.endswith(runner_names) and kind(fn) == "s"

    # dataclasses writes the methods it adds as source, pasting each field's name into it
    # (`def __init__(self, NAME: _type_NAME)`), and compiles that from its own frame. A name
    # is whatever the class's annotations (or a base's __dataclass_fields__) say, and
    # `{"__class__,open(...)": int}` wrote a file. Its compile passes only under its own
    # class processing (_process_class on the stack: not its private helpers called with
    # the experiment's text), with every field a plain Field whose name, read through the
    # slot, is an exact str that is an identifier: then nothing pasted is more than a name.
    def dataclass_frame(f):
        fn = f.f_code.co_filename
        return type(fn) is str and fn.endswith("/dataclasses.py") and fkind(f) == "s"

    def dataclass_fields_ok(frame):
        f = frame
        while f is not None and dataclass_frame(f):
            if f.f_code.co_name == "_process_class":
                fields = frame_local(f, "fields")
                field_cls = sget(f.f_globals, "Field")
                if type(fields) is not dict or type(field_cls) is not type:
                    return False
                slot = _class_attr(field_cls, "name")
                if type(slot) is not _member_t:
                    return False
                for v in kept(list(_dict_values(fields))):
                    if type(v) is not field_cls:
                        return False
                    name = slot.__get__(v)
                    if type(name) is not str or not str.isidentifier(name):
                        return False
                return True
            f = f.f_back
        return False

    _member_t = type(range.__dict__["start"])  # a __slots__ attribute's descriptor

    # PEP 263's declaration, read from a bytes source as the tokenizer reads it. UTF-8,
    # Latin-1 and ASCII it decodes in C; any other name (cp1252, iso-8859-15) it asks the
    # codec registry for, which code of the run can fill (encodings._cache, codecs.register
    # after codecs.unregister): the text compiled is then not the text the check read, though
    # the bytes are the file's. The entry point is decoded before the experiment's first line.
    c_codings = frozenset(["utf_8", "utf8", "latin_1", "latin1", "iso_8859_1", "iso8859_1",
                           "ascii", "us_ascii"])
    _isalnum = str.isalnum

    def registry_coding(source):
        """The coding a bytes source declares when the registry decodes it, else None."""
        if source[:3] == b"\xef\xbb\xbf":
            return None  # a BOM: UTF-8, and any other declaration is a syntax error
        if b"\r" in source:
            # the tokenizer makes \r\n and a lone \r newlines before it reads declarations
            source = source.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        for line in source.split(b"\n", 2)[:2]:
            s = line.lstrip(b" \t\f")
            if not s:
                continue  # a blank line: the next may declare
            if s[:1] != b"#":
                return None  # code: no declaration here or below
            i = s.find(b"coding")
            while i >= 0:
                if s[i + 6:i + 7] in (b":", b"="):
                    rest = s[i + 7:].lstrip(b" \t")
                    j = 0
                    while j < len(rest) and (_isalnum(chr(rest[j])) and rest[j] < 128 or
                                             rest[j] in b"-_."):
                        j += 1
                    if not j:
                        i = s.find(b"coding", i + 1)
                        continue  # `coding:` with no name: the tokenizer reads on
                    name = rest[:j].decode("ascii").lower()
                    first = name[:12].replace("_", "-")
                    if first == "utf-8" or first.startswith("utf-8-") or any(
                            first == n or first.startswith(n + "-")
                            for n in ("latin-1", "iso-8859-1", "iso-latin-1")):
                        return None  # what the tokenizer renames to its own two
                    norm = "".join(c if _isalnum(c) or c == "." else "_" for c in name)
                    return None if norm in c_codings else name
                i = s.find(b"coding", i + 1)
        return None

    def on_compile(event, args, frame):
        source, fn = (tuple(args) + (None, None))[:2]
        fn_text = fn if type(fn) is str else None
        if fn is not None and fn_text is None:
            # A str subclass stays the code's co_filename, and every comparison with it
            # (a kinds lookup, `==` with the import system's names) runs its methods.
            refuse(event, (summary(fn),), frame, "LB103", "dynamic code (eval, exec, compile)",
                   "a file name that is not a plain string (%s)" % summary(fn))
            return
        if frame is None:
            if fn_text and fn_text.startswith("<frozen "):
                entry[0] = False
            else:
                return on_frameless_compile(event, source, fn, fn_text)
        elif type(source) is bytes and registry_coding(source) is not None:
            refuse(event, (fn,), frame, "LB002", "code that cannot be analysed",
                   "%s declares the source encoding %s, which Python decodes through the "
                   "codec registry that code of the run can replace, so what runs may not be "
                   "what the static check read: save the file as UTF-8"
                   % (summary(fn), summary(registry_coding(source))))
            return
        elif check_ran and fn_text and code_names(frame)[0] == "<frozen zipimport>" and \
                kind(fn_text) == "x":
            # The static check reads the experiment's .py files, not what an archive on
            # sys.path holds: under a policy that checks code, code it did not read does not
            # run (a file that is a zip under any name imports through zipimport).
            refuse(event, (fn,), frame, "LB002", "code that cannot be analysed",
                   "Python source in an archive on sys.path (%s), which the static check "
                   "did not read: unpack it into the experiment" % fn_text)
            return
        if fn_text and fn_text.startswith("<frozen "):
            # Frozen modules are unmarshalled, never compiled: a compile naming one is code
            # that would be taken for the interpreter's own.
            refuse(event, (fn,), frame, "LB103", "dynamic code (eval, exec, compile)",
                   "code that claims to be a frozen module of the interpreter's: " + fn_text)
            return
        # Code claiming to be the interpreter's own file would be trusted as it is. The
        # interpreter parses a piece of a line itself when it prints a traceback (the ^^^
        # under a call): from no Python frame, or from the gate's own exception hooks, and
        # nothing it parses there reaches the experiment.
        if frame is not None and printing_frame(frame) and caret_parse(fn_text, source):
            return  # the printer's parse of a piece of a line, under the gate's hooks
        if fn_text and kind(fn_text) != "x" and not same_as_file(fn_text, source):
            refuse(event, (fn,), frame, "LB103", "dynamic code (eval, exec, compile)",
                   "code that claims to be the interpreter's file " + fn_text)
            return
        if frame is not None and fkind(frame) != "x" and annotation_frame(frame) and \
                not type_expression(source):
            refuse(event, (source, fn), frame, "LB103", "dynamic code (eval, exec, compile)",
                   "an annotation that is no type expression, evaluated by %s"
                   % summary(frame.f_code.co_filename))
            return
        exp_fn = fn_text
        if exp_fn and not exp_fn.startswith("/") and exp_fn.endswith(".py"):
            exp_fn = p_abspath(exp_fn)  # Python 3.8 names the script's directory as given
        in_exp = bool(exp_fn and exp_dir and exp_fn.startswith(exp_dir + "/"))
        if check_ran and staged_ns > 0 and in_exp:
            # A module of the experiment's that the check did not read, whoever compiles it
            # (a library frame that calls what it is handed makes any call its own): one
            # the run wrote or changed, one reached through a link or a name the check does
            # not read, one in a directory the check skips; as a .pyc outside the
            # interpreter's paths is
            why = unread_by_check(exp_fn)
            if why is not None:
                refuse(event, (fn,), frame, "LB103", "dynamic code (eval, exec, compile)",
                       why % fn_text)
                return
        elif check_ran and not in_exp and fn_text and fn_text.startswith("/") and \
                kind(fn_text) == "x" and same_as_file(fn_text, source):
            # A source file outside the experiment and the libraries (/tmp, /dev/shm, an
            # output path, a directory of the host's the sandbox shows) compiled as it is (an
            # import after sys.path.insert, a load by path, torch.hub's local hubconf),
            # whichever frame asks: code the static check did not read
            refuse(event, (fn,), frame, "LB103", "dynamic code (eval, exec, compile)",
                   ("a file the run wrote or changed (%s), which the static check did not "
                    "read" if staged_ns > 0 and not staged_file(fn_text) else
                    "a source file outside the experiment (%s), which the static check did "
                    "not read: put it in the experiment, or name its directory on "
                    "PYTHONPATH") % fn_text)
            return
        k = fkind(frame) if frame is not None else "s"
        if frame is None or (k == "l" and not handed_in(frame)) or \
                timeit_template(frame, source):
            return  # a library's own code (what it is handed: decisions.md, the trampolines)
        if k == "l":
            k = "x"  # a library calling exec or compile it was handed: the experiment's
        m = maker_of(frame)
        if (k == "s" or m is not None) and not runner_frame(frame):
            if m is not None and maker_compile_ok(m, frame, source, fn_text):
                return  # the import system, namedtuple, dataclasses, typing: their own text
            if m is not None and m != "import":
                refuse(event, (source, fn), frame, "LB103", "dynamic code (eval, exec, compile)",
                       "text compiled by %s that is not the text it makes (names that are "
                       "no identifiers, a template replaced, a private helper called with "
                       "the experiment's text)" % summary(frame.f_code.co_filename))
                return
        if fn_text and exp_dir and fn_text.startswith(exp_dir + "/") and same_as_file(fn_text, source):
            note_file_compile(frame, source)
            return  # a file of the experiment, compiled as it is
        if k == "x" and py_reads and (type(source) is str or type(source) is bytes):
            for p in py_reads[::-1]:
                if unread_by_check(p) is None and same_as_file(p, source):
                    note_file_compile(frame, source)
                    # exec(TEXT) compiles and runs in the one call: its run is this code
                    file_text_run[:] = [_ident(), frame, frame.f_lasti]
                    return  # the text of a .py file of the experiment's it read, as it is
        if fstring_parts and fn_text == "<fstring>" and fstring_of_file(frame, source):
            return  # an f-string's expression, parsed within that compile (3.8)
        if k == "s" and not runner_frame(frame):
            refuse(event, (source, fn), frame, "LB103", "dynamic code (eval, exec, compile)",
                   "text compiled by %s, which makes no code of its own there: the standard "
                   "library's call of what it was handed" % summary(frame.f_code.co_filename))
            return
        refuse(event, (source, fn), frame, "LB103", "dynamic code (eval, exec, compile)")

    # The standard library's makers of code, and what each may compile. Every other frame
    # of the standard library that compiles, execs or makes a code object is calling what it
    # was handed (contextlib's callbacks, functools' dispatch, optparse's read_file,
    # rlcompleter, pydoc, multiprocessing's MakeProxyType with names that are code): that
    # is the experiment's dynamic code. The list is closed: a site not on it is refused,
    # where before only the runners were.
    maker_files = {
        "/importlib/_bootstrap.py": "import", "/importlib/_bootstrap_external.py": "import",
        "/importlib/abc.py": "import", "/importlib/util.py": "import", "/pkgutil.py": "import",
        "/py_compile.py": "import", "/compileall.py": "import", "/modulefinder.py": "import",
        "/zipimport.py": "zip", "/collections/__init__.py": "namedtuple", "/gettext.py": "plural",
        "/ast.py": "ast", "/dataclasses.py": "dataclasses", "/typing.py": "annotation",
        "/inspect.py": "annotation", "/annotationlib.py": "annotation",
        "/multiprocessing/managers.py": "proxy", "/multiprocessing/sharedctypes.py": "property",
        "/warnings.py": "name", "/unittest/mock.py": "mock"}
    maker_frozen = {"<frozen importlib._bootstrap>": "import",
                    "<frozen importlib._bootstrap_external>": "import",
                    "<frozen zipimport>": "zip"}
    # multiprocessing.sharedctypes' template, as CPython 3.8 to 3.13 write it: a module global
    # the experiment can rebind, so the text is checked, not only the name pasted into it
    property_template = (
        "\ndef get%s(self):\n    self.acquire()\n    try:\n        return self._obj.%s\n"
        "    finally:\n        self.release()\ndef set%s(self, value):\n    self.acquire()\n"
        "    try:\n        self._obj.%s = value\n    finally:\n        self.release()\n"
        "%s = property(get%s, set%s)\n")

    def maker_of(f):
        fn = f.f_code.co_filename
        if type(fn) is not str:
            return None
        m = _dict_get(maker_frozen, fn)
        if m is None:
            i = fn.rfind("/")
            j = fn.rfind("/", 0, i) if i > 0 else -1
            m = _dict_get(maker_files, fn[i:]) if i >= 0 else None
            if m is None and j >= 0:
                m = _dict_get(maker_files, fn[j:])
        # the file's own kind, inside a marked load too: what a maker may compile is judged
        # by its text, whoever called it (a Manager's proxy rebuilt in a spawned child
        # makes its proxy type while the pickle loads)
        return m if m is not None and fkind_raw(f) == "s" else None

    def as_utf8(source):
        """compile's event carries the text as the bytes it was turned into"""
        if type(source) is str:
            try:
                return source.encode("utf-8")
            except UnicodeError:
                return None
        return bytes(source) if type(source) is bytes or type(source) is bytearray else None

    def identifier(v):
        return type(v) is str and str.isidentifier(v)

    # The functions of a maker's file that make code. Another frame of the same file calls
    # what it was handed: a Counter subclass whose update is exec has Counter.__init__
    # call exec with the experiment's string.
    maker_functions = {
        "namedtuple": ("namedtuple",), "plural": ("c2py",), "ast": ("parse",),
        "dataclasses": ("_create_fn", "add_fns_to_class"),
        "annotation": ("__init__", "_evaluate", "get_annotations", "<dictcomp>", "wrap_value"),
        "proxy": ("MakeProxyType",), "property": ("make_property",),
        "mock": ("_set_signature", "_set_async_signature"), "name": ("_getcategory",)}

    def maker_function(m, frame):
        names = _dict_get(maker_functions, m)
        return names is None or frame.f_code.co_name in names

    def extension_init(frame):
        """An extension module's init compiling its snippets (Cython's) under the import
        system's create_module or, multi-phase, exec_module."""
        b = frame.f_back
        return frame.f_code.co_name == "_call_with_frames_removed" and b is not None and \
            b.f_code.co_name in ("create_module", "exec_module") and maker_of(b) == "import"

    def maker_compile_ok(m, frame, source, fn_text):
        if not maker_function(m, frame):
            return False
        if m == "zip" or m == "namedtuple" or m == "plural" or m == "ast":
            return True
        if m == "import":
            # a file as it is on disk (a loader of the experiment's own text, a finder that
            # makes modules up, is its dynamic code), an empty module, or an extension's
            # init compiling its snippets
            if extension_init(frame):
                return True
            if (type(source) is str or type(source) is bytes) and not source.strip():
                return True
            if fn_text and same_as_file(fn_text, source):
                note_file_compile(frame, source)
                return True
            return fstring_parts and fn_text == "<fstring>" and fstring_of_file(frame, source)
        if m == "dataclasses":
            return dataclass_fields_ok(frame)
        if m == "annotation":
            return type_expression(source)
        if m == "proxy":
            return identifier(frame_local(frame, "meth"))
        if m == "property":
            name = frame_local(frame, "name")
            return identifier(name) and sget(frame.f_globals, "template") == property_template \
                and as_utf8(source) == (property_template % ((name,) * 7)).encode("utf-8")
        if m == "mock":
            # autospec's signature-checking function, named after the original's __name__
            return identifier(frame_local(frame, "name"))
        if m == "name":
            if type(source) is bytes:
                try:
                    source = source.decode("ascii")
                except UnicodeError:
                    return False
            return identifier(source)
        return False

    # Python 3.8 parses each f-string expression of a file being compiled as a compile of
    # its own ("<fstring>"), from the frame that called compile: runpy's, when a spawned
    # child runs the experiment's main.py again as __mp_main__. Such a part is the
    # expression in parentheses, a piece of the file's text, asked at the same instruction
    # of the same frame on the same thread as the file's compile just passed.
    file_compile = []

    file_text_run = []  # [thread, frame, instruction] of an exec of a file's text

    def staged_file(fn):
        """A file as labbox staged it: not changed since (its ctime, which no call of the
        run's can set back, is older), so the static check read what it holds."""
        if staged_ns <= 0:
            return False
        try:
            # labbox read staged_ns off a file it made after staging, on the same file
            # system: a staged file's ctime is at most that, whatever its granularity
            return _stat_fn(fn).st_ctime_ns <= staged_ns
        except (OSError, ValueError):
            return False

    # The directories labbox check does not read (skip_dir in src/check/check.c): the
    # version control's, labbox's own records, caches, and virtual environments
    check_skips = frozenset(["__pycache__", ".git", ".labbox", "node_modules", "site-packages",
                             "venv", ".venv"])

    def unread_by_check(fn):
        """None for a .py file of the experiment's that the static check read as it is now;
        else why not, with a %s for the file's name."""
        if not staged_file(fn):
            return "a file the run wrote or changed (%s), which the static check did not read"
        rp = p_realpath(fn)
        try:
            if rp != fn and _lstat(fn).st_ctime_ns > staged_ns:
                return ("%s: a link the run made, to a file the static check did not read "
                        "under that name")
            regular = (_lstat(rp).st_mode & 0o170000) == 0o100000
        except (OSError, ValueError):
            return "%s: a file labbox cannot see as the static check did"
        if not rp.startswith(exp_dir + "/") or not rp.endswith(".py") or not regular:
            return ("%s: not a .py file of the experiment's (" +
                    summary(rp).replace("%", "%%") + "), which the static check does not read")
        d = exp_dir
        for part in rp[len(exp_dir) + 1:].split("/")[:-1]:
            d = d + "/" + part
            try:
                st = _lstat(d)
                ident = (st.st_dev, st.st_ino)
            except (OSError, ValueError):
                ident = None
            if part in check_skips or p_exists(d + "/pyvenv.cfg") or \
                    p_exists(d + "/conda-meta") or ident is None or ident in unread_dirs:
                return ("%s: in a directory the static check did not read (" +
                        summary(part).replace("%", "%%") +
                        ": a cache, records, or a virtual environment, whatever its name now)")
        return None

    def note_file_compile(frame, source):
        if fstring_parts:
            file_compile[:] = [_ident(), frame, frame.f_lasti, source]

    def fstring_of_file(frame, source):
        if len(file_compile) != 4 or frame is None:
            return False
        ident, f, lasti, text = file_compile
        if ident != _ident() or f is not frame or frame.f_lasti != lasti:
            return False
        source, text = as_utf8(source), as_utf8(text)
        if source is None or text is None or len(source) < 3 or source[:1] != b"(" or \
                source[-1:] != b")":
            return False
        return source[1:-1] in text

    def banned_file(fn):
        """The rule of a banned module whose source file fn is (ctypes/__init__.py: LB106;
        "<frozen runpy>": LB103), or None."""
        if type(fn) is str and fn.startswith("<frozen ") and fn.endswith(">"):
            name = fn[8:-1]
            hit = _dict_get(banned, name) or _dict_get(banned, name.split(".")[0])
            return (hit, name) if hit else None
        if type(fn) is not str or not fn.endswith(".py"):
            return None
        for r in trusted_roots:
            if fn.startswith(r + "/"):
                rel = fn[len(r) + 1:-3]
                if rel.endswith("/__init__"):
                    rel = rel[:-9]
                parts = rel.split("/")
                for i in range(len(parts), 0, -1):
                    hit = _dict_get(banned, ".".join(parts[:i]))
                    if hit:
                        return hit, ".".join(parts)
                return None
        return None

    def loads_for_experiment(frame):
        """Whether the first frame past the import system's own (and the gate's stand-ins,
        which pass an import on) is the experiment's, or a runner's call: the judge of an
        import event, and of a module run because the experiment's code asked its loader
        directly (a spec's loader.load_module(), exec_module)."""
        f = frame
        while f is not None:
            fn = f.f_code.co_filename
            if not (type(fn) is str and (fn.startswith("<frozen ") or fn in passthrough)) \
                    and f.f_globals is not world:
                break
            f = f.f_back
        return f is None or fkind(f) == "x" or runner_call(f) or handed_in(frame)

    def on_exec(event, args, frame):
        code = args[0] if args else None
        if frame is not None and type(code) is _CodeType:
            # A banned module's own code run for the experiment without an import event
            # (find_spec("ctypes").loader.load_module()): refused as its import would be.
            hit = banned_file(code.co_filename)
            if hit and loads_for_experiment(frame):
                refuse(event, (hit[1],), frame, hit[0][0], hit[0][1],
                       "%s run by its loader, for the experiment's code" % hit[1])
                return
        if frame is None:
            # The entry point's code, or code the experiment hands a callback: run from no
            # frame it is judged by the file it names, and one naming a trusted file would
            # run as that file's.
            code = args[0] if args else None
            fn = getattr(code, "co_filename", None) if type(code) is _CodeType else None
            if fn is not None and kind(fn) != "x":
                refuse(event, (fn,), None, "LB103", "dynamic code (eval, exec, compile)",
                       "code naming %s run from no Python frame, by a callback the "
                       "interpreter ran" % summary(fn))
            return
        k = fkind(frame)
        if k == "l":
            return  # a library's own code (what it is handed: decisions.md, the trampolines)
        m = maker_of(frame)
        if k == "s" or m is not None:
            # the experiment's own file (spawn's runpy.run_path of main.py, compiled as it
            # is: on_compile saw to that)
            cfn = code.co_filename if type(code) is _CodeType else None
            if type(cfn) is str and exp_dir and cfn.startswith(exp_dir + "/"):
                return
            if not runner_frame(frame):
                if m is not None and maker_function(m, frame):
                    return  # what a maker compiled from its own text, judged there
                refuse(event, args, frame, "LB103", "dynamic code (eval, exec, compile)",
                       "code run by %s, which runs no code of its own there: the standard "
                       "library's call of what it was handed"
                       % summary(frame.f_code.co_filename))
                return
            # timeit runs what it compiled in the same call, which on_compile judged; and
            # the code must have the template's shape (one function, inner, that calls only
            # what it was given), whoever compiled it
            if cfn == "<timeit-src>" and timeit_frame(frame) and timeit_shaped(code):
                return
        if k == "x" and len(file_text_run) == 3 and type(code) is _CodeType:
            ident, f, lasti = file_text_run
            del file_text_run[:]
            if ident == _ident() and f is frame and frame.f_lasti == lasti:
                return  # exec(open("config.py").read()): what on_compile found a file's text
        refuse(event, args, frame, "LB103", "dynamic code (eval, exec, compile)")

    def flag_setter(f):
        """types.coroutine, which sets a flag of a generator's code and keeps its file."""
        code = f.f_code
        name, fn = code.co_name, code.co_filename
        return type(name) is str and name == "coroutine" and type(fn) is str and \
            fn.endswith("/types.py") and fkind(f) == "s"

    def on_code_new(event, args, frame):
        # The standard library replaces flags of its own code (types.coroutine); a code
        # object the experiment builds or edits is dynamic code, whatever file it names.
        if frame is not None and fkind(frame) == "x":
            refuse(event, args[1:3], frame, "LB103", "dynamic code (eval, exec, compile)")
            return
        # Code that names a file of the interpreter's or a library's is trusted as that
        # file wherever it runs. Made by the standard library for the experiment, through a
        # helper that calls what it is given (a thread pool's worker, a Thread's target,
        # copy's __reduce_ex__), or from no frame at all, the relabelling is the
        # experiment's: then its ctypes and its imports would pass as the library's.
        fn = args[1] if len(args) > 1 else None
        if fn is not None and type(fn) is not str:
            refuse(event, (summary(fn),), frame, "LB103", "dynamic code (eval, exec, compile)",
                   "a file name that is not a plain string (%s)" % summary(fn))
            return
        if frame is not None:
            # Python 3.8's marshal makes each code object of a .pyc through this event: the
            # import system reading bytecode from the interpreter's own paths is not a claim
            src = bytecode_source(frame)
            if src is not None and _under(src, trusted_roots):
                return
        if frame is not None and fkind(frame) == "s" and maker_of(frame) is None and \
                not flag_setter(frame):
            # a code object made by the standard library's call of what it was handed
            # (CodeType.replace through a callback): the experiment's, whatever it names
            refuse(event, args[1:3], frame, "LB103", "dynamic code (eval, exec, compile)",
                   "a code object made by %s, which makes none of its own there"
                   % summary(frame.f_code.co_filename))
            return
        if type(fn) is str and kind(fn) != "x" and \
                (frame is None or not flag_setter(frame)):
            # Only types.coroutine edits code that claims a trusted file. A library's frame
            # may be calling what the experiment handed it (np.vectorize over
            # partial(CodeType.replace, co_filename=np.__file__)), so it proves nothing.
            refuse(event, args[1:3], frame, "LB103", "dynamic code (eval, exec, compile)",
                   "code made to claim the file %s, through the standard library's call of "
                   "what it was given" % summary(fn))

    # Frames are trusted by the file their code names (co_filename), and a .pyc names any
    # file it likes: bytecode the import system reads is loaded only from the interpreter's
    # and the libraries' read-only paths, never from a .pyc the experiment shipped or wrote.
    _ext = sys.modules.get("_frozen_importlib_external")
    _loaders = tuple(c for c in (getattr(_ext, "SourceFileLoader", None),
                                 getattr(_ext, "SourcelessFileLoader", None)) if c is not None)
    _file_get_data = getattr(getattr(_ext, "FileLoader", None), "get_data", None)
    _BOOT_EXT = "<frozen importlib._bootstrap_external>"
    _BOOT = "<frozen importlib._bootstrap>"

    def code_names(f):
        """(co_filename, co_name) of a frame's code when both are exact strs, else
        (None, None): a str subclass compared with `==` runs its own __eq__."""
        code = f.f_code
        fn, name = code.co_filename, code.co_name
        if type(fn) is str and type(name) is str:
            return fn, name
        return None, None

    _type_dict = type.__dict__["__dict__"].__get__
    # Classes whose dict was seen to hold exact-str keys alone: once a class is made, type's
    # setattr keeps them so, so a class is looked at once.
    clean_classes = {}

    def check_class_dict(c, name):
        """c's dict, once seen to hold exact-str keys alone (a class made from a dict with
        keys of its own is refused, as _Tampered(name))."""
        d = _type_dict(c)
        if clean_classes.get(id(c)) is not c:
            if not str_keys(d):
                raise _Tampered(name)
            if len(clean_classes) < 4096:
                clean_classes[id(c)] = c
        return d

    def frame_local(f, name):
        """A variable of a frame: its f_locals is a dict up to 3.12, and from 3.13 a proxy
        over the frame (PEP 667), whose items are read through its own C type."""
        fl = f.f_locals
        if type(fl) is dict:
            return sget(fl, name)
        try:
            items = kept(list(type(fl).items(fl)))
        except Exception:
            return None
        return sget_items(items, name)

    def _class_attr(cls, name):
        """What cls's own MRO holds under name, read from the classes' dicts (whose keys
        are exact strs: type's setattr makes them so) without running a descriptor."""
        for c in type.__dict__["__mro__"].__get__(cls):
            d = check_class_dict(c, name)
            if name in d:
                return d[name]
        return None

    def bytecode_source(f):
        """The file the import system read the bytecode being unmarshalled from, when it is
        the import system's own reading (an unchanged loader of the interpreter's), else
        None: then the bytes are whatever the caller handed it."""
        fn, name = code_names(f)
        if fn is None or not genuine_frame(f):
            return None
        if fn == _BOOT_EXT and name == "_compile_bytecode":
            up = f.f_back
            if up is None or code_names(up) != (_BOOT_EXT, "get_code") or \
                    not genuine_frame(up):
                return None
            me = frame_local(up, "self")
            # The type first: a __dict__ property of a loader subclass ran here before.
            if not is_one(type(me), _loaders):
                return None
            own = object.__getattribute__(me, "__dict__")
            if type(own) is not dict or sget(own, "get_data") is not None or \
                    _class_attr(type(me), "get_data") is not _file_get_data:
                return None
            p = frame_local(f, "bytecode_path")
        elif fn == "<frozen zipimport>" and name == "_unmarshal_code":
            p = frame_local(f, "fullpath")
        else:
            return None
        return p if type(p) is str else None

    # 3.13 unmarshals a frozen module's code (importlib.util is one) through
    # FrozenImporter.exec_module's _call_with_frames_removed(_imp.get_frozen_object, name):
    # the bytes are the interpreter's own, compiled into it, for a name in its table. The
    # function is checked to be the original (a partial of marshal.loads would run from the
    # same frame), called with the name alone (its optional data would be anyone's).
    _get_frozen = getattr(sys.modules.get("_imp"), "get_frozen_object", None)

    def frozen_unmarshal(f):
        if _get_frozen is None or code_names(f) != (_BOOT, "_call_with_frames_removed") or \
                not genuine_frame(f):
            return False
        up = f.f_back
        if up is None or code_names(up) != (_BOOT, "exec_module") or not genuine_frame(up):
            return False
        a = frame_local(f, "args")
        return frame_local(f, "f") is _get_frozen and type(a) is tuple and len(a) == 1 and \
            type(a[0]) is str and not frame_local(f, "kwds")

    def on_marshal(event, args, frame):
        if frame is not None and frozen_unmarshal(frame):
            return
        if frame is None:
            # The import system reads bytecode from its own frames; from no frame it is a
            # callback's, with bytes the experiment chose (code naming any file).
            refuse(event, (), None, "LB103", "dynamic code (eval, exec, compile)",
                   "marshal.loads called from no Python frame, by a callback the "
                   "interpreter ran")
            return
        src = bytecode_source(frame)
        if src is not None:
            if not _under(src, trusted_roots):
                refuse(event, (src,), frame, "LB103", "dynamic code (eval, exec, compile)",
                       "bytecode of a .pyc outside the interpreter's read-only paths, which "
                       "no check read and which may claim any file's name: " + src)
            return
        # Anything else is the caller's, through the standard library's helpers too
        # (pkgutil.read_code for runpy.run_path of a .pyc).
        k, _ = origin(frame)
        if k == "x":
            refuse(event, (), frame, "LB103", "dynamic code (eval, exec, compile)",
                   "marshal.loads can make code objects")

    # ---- native code and the interpreter's insides --------------------------------------------
    # Native code from a place the run can write (exp/, the outputs, the private /tmp,
    # /var/tmp and /dev/shm: in the sandbox every other file system is read-only) is code
    # no check read: a shared object the experiment shipped or wrote, an extension module
    # beside main.py, loaded by the experiment or by a library on its behalf
    # (numpy.ctypeslib.load_library), whoever asks. Its constructors run at the load,
    # before any call a hook could judge. Both the path as given and where it leads are
    # asked: a link in a writable place can be changed after the look. An interpreter's or
    # library's own path on a writable file system (a venv on a volume the user mounted
    # read-write) is the user's environment, as its Python files are.
    _ST_RDONLY = getattr(os, "ST_RDONLY", 1)

    def fs_writable(p):
        try:
            return not (_statvfs(p).f_flag & _ST_RDONLY)
        except (OSError, ValueError):
            return False  # absent: the load fails by itself

    def native_path_writable(p):
        """The path the load will open when it lies where the run can write, else None. The
        value is what the C side converted (a str or bytes subclass's own characters, never
        its methods); anything else (a PathLike, whose __fspath__ may answer differently
        the second time) counts as writable."""
        if issubclass(type(p), bytes):
            p = bytes.decode(_bytes_item(p, _all), fs_encoding, "surrogateescape")
        elif issubclass(type(p), str):
            p = str.__str__(p)
        else:
            return summary(p)
        if "/" not in p:
            return None  # a bare name: the dynamic linker's search, fixed at start-up
        try:
            given = p_abspath(p)
            real = p_realpath(p)
        except (OSError, ValueError):
            return p
        for q in (given, real):
            if _under(q, writable):
                return q
        for q in (real, p_split(given)[0]):
            if not _under(real, trusted_roots) and fs_writable(q):
                return real
        return None

    def refuse_native_writable(event, path, frame):
        refuse(event, (summary(path),), frame, "LB106", "native code (ctypes, cffi)",
               "a shared object in a place the run can write (%s), which no check read: "
               "native code comes from the interpreter's and the libraries' read-only "
               "paths (an environment outside the experiment, or --runtime-gate off under "
               "--policy permissive)" % summary(path))

    def ctypes_importing(frame):
        """Whether ctypes's own module code is on the few frames above (pythonapi and the
        loader it makes as it is imported): CDLL(None) made elsewhere is the interpreter's
        symbols (system()) handed to whoever asked."""
        f, n = frame, 0
        while f is not None and n < 4:
            fn, name = code_names(f)
            if name == "<module>" and fn is not None and fn.endswith("/ctypes/__init__.py") \
                    and fkind(f) == "s":
                return True
            f, n = f.f_back, n + 1
        return False

    # multiprocessing's shared values (mp.Value, mp.Array, their Raw forms, and the same
    # objects rebuilt in a spawned child) lay a ctypes object over shared memory: from_buffer
    # (cdata/buffer, then cdata) in rebuild_ctype, and addressof before RawValue and RawArray
    # zero it. Those three events pass from sharedctypes' own functions, whoever called them.
    # They give nothing the experiment's reach of ctypes would not: a module that imported
    # ctypes hands it over (multiprocessing.sharedctypes.ctypes), and its data types and
    # function pointers read, write and call memory with no audit event at all (foreign
    # calls raise none on Linux), which no in-process hook can see: docs/decisions.md,
    # "ctypes in reach".
    shared_ctypes_events = {"ctypes.cdata/buffer": ("rebuild_ctype",),
                            "ctypes.cdata": ("rebuild_ctype",),
                            "ctypes.addressof": ("RawValue", "RawArray")}

    def shared_ctypes(event, frame):
        names = shared_ctypes_events.get(event)
        if names is None or frame is None:
            return False
        fn, name = code_names(frame)
        return fn is not None and name in names and \
            fn.endswith("/multiprocessing/sharedctypes.py") and fkind(frame) == "s"

    def on_native(event, args, frame):
        if event == "ctypes.dlopen" and args and args[0] is None and ctypes_importing(frame):
            return  # the interpreter itself: what ctypes does when it is imported
        if shared_ctypes(event, frame):
            return
        if event == "ctypes.dlopen" and args:
            w = native_path_writable(args[0])
            if w is not None:
                refuse_native_writable(event, w, frame)
                return
        k, _ = origin(frame)
        if k == "x" or (k == "l" and handed_in(frame)):
            refuse(event, args[:2] if event.startswith("ctypes.dl") else (), frame, "LB106",
                   "native code (ctypes, cffi)")

    # Variables a native library reads when it starts, to load a shared object from a path
    # they name: OpenSSL's configuration names provider modules (hashlib and ssl start it),
    # glibc's iconv its converters, an OpenMP runtime its tools. Set by the experiment (or a
    # library reading its .env) they load native code without ctypes, as LD_PRELOAD would in
    # a child, which the child's environment does not take from the experiment.
    # The list is the C side's lb_gate_loader_vars, which refuses them before the run.
    loader_env = frozenset([
        "GCONV_PATH", "OPENSSL_CONF", "OPENSSL_CONF_INCLUDE", "OPENSSL_MODULES",
        "OPENSSL_ENGINES", "OMP_TOOL_LIBRARIES", "CUDA_INJECTION64_PATH",
        "NVTX_INJECTION64_PATH", "NVTX_INJECTION32_PATH", "NCCL_NET_PLUGIN",
        "NCCL_TUNER_PLUGIN", "NCCL_PROFILER_PLUGIN", "HDF5_PLUGIN_PATH", "TCL_LIBRARY",
        "TK_LIBRARY", "TCLLIBPATH", "QT_PLUGIN_PATH", "QT_QPA_PLATFORM_PLUGIN_PATH",
        "GTK_PATH", "GTK_MODULES", "GIO_MODULE_DIR", "GI_TYPELIB_PATH", "GST_PLUGIN_PATH",
        "GST_PLUGIN_PATH_1_0", "GDK_PIXBUF_MODULE_FILE", "LIBGL_DRIVERS_PATH",
        "__EGL_VENDOR_LIBRARY_FILENAMES", "VK_ICD_FILENAMES", "VK_LAYER_PATH",
        "OCL_ICD_VENDORS", "OPENCL_VENDOR_PATH", "SASL_PATH", "GIO_EXTRA_MODULES",
        "GST_PLUGIN_SYSTEM_PATH", "GST_PLUGIN_SYSTEM_PATH_1_0", "OCL_ICD_FILENAMES",
        "VK_DRIVER_FILES", "VK_ADD_DRIVER_FILES", "VK_ADD_LAYER_PATH",
        "PJRT_NAMES_AND_LIBRARY_PATHS", "OMPI_MCA_mca_base_component_path", "NCCL_CONF_FILE"])

    def on_putenv(event, args, frame):
        key = args[0] if args else None
        if type(key) is bytes:
            key = key.decode("ascii", "replace")
        if type(key) is str and key in loader_env:
            refuse(event, (key,), frame, "LB106", "native code (ctypes, cffi)",
                   "%s names shared objects a native library loads" % key)

    def on_sqlite_ext(event, args, frame):
        # sys.audit raises any event with any objects: the flag is read by its exact type,
        # never by truth (a __bool__ of the experiment's would run here)
        on = args[1] if len(args) > 1 else False
        if not (on is False or (type(on) is int and on == 0)):
            refuse(event, (), frame, "LB106", "native code (ctypes, cffi)",
                   "sqlite extensions are native code")

    def on_getattr(event, args, frame):
        # The links of what the gate leaves in reach (the world's functions): their
        # __kwdefaults__ read, or any of __kwdefaults__, __defaults__, __code__ replaced.
        f = args[0] if len(args) > 1 else None
        if type(f) is not _FunctionType:
            return
        code = _func_code(f)
        if sealed_codes.get(id(code)) is code:
            refuse(event, (args[1],), frame, "gate.tamper",
                   "access to the interpreter's insides",
                   "the gate's stand-in for a module's function, or its exception hook")

    # Refused whoever asks: gc's walks hand over any object (a stand-in's keyword defaults,
    # the gate's closures), and a trace, profile or monitoring callback is handed every
    # Python frame the interpreter runs, the gate's stand-ins with their links among them
    # (sys._getframe from a sys.monitoring callback reads a frame's locals). A library's
    # frame proves nothing here: it may be calling what the experiment handed it
    # (np.vectorize(sys.settrace)), and an audit hook cannot see where a callable came from.
    any_origin = frozenset(["sys.addaudithook", "sys.settrace", "sys.setprofile",
                            "sys._current_frames", "sys._current_exceptions",
                            "sys.monitoring.register_callback",
                            # any address taken as an object: all of memory, gate included
                            "ctypes.PyObj_FromPtr"])

    def on_tamper(event, args, frame):
        if event == "sys.monitoring.register_callback" and args and args[0] is None:
            return  # a callback taken off
        k, _ = origin(frame)
        if k == "x" or event in any_origin or event.startswith("gc."):
            rule, title = ("LB111", "unresolved access to a sensitive name") \
                if event.startswith("gc.") else ("gate.tamper", "access to the interpreter's insides")
            refuse(event, (), frame, rule, title)

    # ---- pickle ------------------------------------------------------------------------------
    pickle_funcs = frozenset([
        ("copyreg", "_reconstructor"), ("copyreg", "__newobj__"), ("copyreg", "__newobj_ex__"),
        ("copy_reg", "_reconstructor"), ("__builtin__", "set"), ("__builtin__", "frozenset"),
        ("builtins", "set"), ("builtins", "frozenset"), ("builtins", "list"),
        ("builtins", "dict"), ("builtins", "tuple"), ("builtins", "bytearray"),
        ("builtins", "bytes"), ("builtins", "complex"), ("builtins", "slice"),
        ("builtins", "range"), ("builtins", "int"), ("builtins", "float"), ("builtins", "str"),
        ("builtins", "bool"), ("builtins", "object"), ("_codecs", "encode"),
        ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
        ("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer"),
        ("numpy.ma.core", "_mareconstruct"), ("numpy.random._pickle", "__bit_generator_ctor"),
        ("numpy.random._pickle", "__randomstate_ctor"),
        ("numpy.random._pickle", "__generator_ctor"),
        ("torch._utils", "_rebuild_tensor"), ("torch._utils", "_rebuild_tensor_v2"),
        ("torch._utils", "_rebuild_tensor_v3"), ("torch._utils", "_rebuild_parameter"),
        ("torch._utils", "_rebuild_parameter_with_state"),
        ("torch._utils", "_rebuild_sparse_tensor"), ("torch._utils", "_rebuild_qtensor"),
        ("torch._utils", "_rebuild_device_tensor_from_numpy"),
        ("torch._utils", "_rebuild_meta_tensor_no_storage"),
        ("torch._utils", "_rebuild_wrapper_subclass"), ("torch._utils", "_rebuild_nested_tensor"),
        ("torch._tensor", "_rebuild_from_type_v2"), ("torch._tensor", "_rebuild_from_type"),
        ("torch.storage", "_load_from_bytes"), ("collections", "OrderedDict"),
        ("collections", "defaultdict"), ("collections", "deque"), ("collections", "Counter"),
        # an array.array's own (the type is checked to be an array's, the items are bytes)
        ("array", "_array_reconstructor"), ("array", "array"),
        # a random.Random kept in a checkpoint: its state is a tuple of ints
        ("random", "Random"),
        ("multiprocessing.pool", "mapstar"), ("multiprocessing.pool", "starmapstar"),
        # What a spawned or forkserver child is handed to run: the pool's and the process
        # pool executor's worker loops (they call only what passes this list too).
        ("multiprocessing.pool", "worker"), ("concurrent.futures.process", "_process_worker"),
        ("concurrent.futures.process", "_process_chunk"),
        # torch's own: what mp.spawn (start_processes) and a DataLoader's worker run in a
        # spawned or forkserver child; they call only what the pickle hands them.
        ("torch.multiprocessing.spawn", "_wrap"),
        ("torch.utils.data._utils.worker", "_worker_loop"),
        ("torch.utils.data._utils.collate", "default_collate"),
        ("torch.utils.data._utils.collate", "default_convert"),
        ("functools", "partial"), ("functools", "reduce"),
        # how compiled patterns and loggers pickle, and the records a QueueHandler sends
        ("re", "_compile"), ("logging", "getLogger"), ("logging", "LogRecord"),
        # a sparse tensor's layout, looked up among torch's layouts by its name
        ("torch.serialization", "_get_layout"),
        ("multiprocessing.managers", "RebuildProxy"),
        # a shared value with its lock, as a spawned child gets it (mp.Value, mp.Array):
        # it wraps the ctypes object it is handed in properties that read it
        ("multiprocessing.sharedctypes", "synchronized"),
    ] + [("ctypes", "c_" + t) for t in (
        # ... and the value types it is laid out in, by sharedctypes' type codes: numbers and
        # characters, no pointer (c_char_p, c_void_p, py_object) among them
        "char", "wchar", "byte", "ubyte", "short", "ushort", "int", "uint", "long", "ulong",
        "longlong", "ulonglong", "float", "double")])
    # multiprocessing and torch.multiprocessing hand queues, connections, descriptors and
    # tensors to their workers with reconstruction functions of their own.
    rebuild_mods = ("multiprocessing", "torch.multiprocessing", "concurrent.futures")
    class_mods = ("numpy", "torch", "torch.nn", "multiprocessing", "concurrent.futures", "torch.optim", "torch.storage", "torch._utils",
                  "torch._tensor", "torch.distributions", "collections", "datetime", "decimal",
                  "fractions", "uuid", "pathlib", "argparse", "enum", "numbers", "types",
                  "pandas", "scipy.sparse", "sklearn", "ipaddress", "statistics")
    # Refused too: torch's subsystems that write Python source from their own state and
    # compile it from their (trusted) frames, so that a pickle's data becomes code: fx's
    # GraphModule recompiles from its Graph and code generator, benchmark's Timer from its
    # statement, and their kin in dynamo, inductor, onnx, quantization's fx and testing.
    class_mods_refused = ("torch.package", "torch.jit", "torch.utils.cpp_extension",
                          "torch.hub", "numpy.distutils", "numpy.f2py", "types.CodeType",
                          "torch.fx", "torch.utils.benchmark", "torch._dynamo",
                          "torch._inductor", "torch.onnx", "torch.ao.quantization.fx",
                          "torch.quantization.fx", "torch.testing", "torch.distributed",
                          "torch.utils.bundled_inputs", "torch._export", "torch.export",
                          # a CDLL of any library, loaders of files, and test helpers that
                          # run strings (numpy.testing's runstring)
                          "numpy.ctypeslib", "numpy.testing", "numpy.compat", "numpy.lib.utils")
    # The same lists as paths, for _under, made once.
    rebuild_roots = tuple(m.replace(".", "/") for m in rebuild_mods)
    class_roots = tuple(m.replace(".", "/") for m in class_mods)
    refused_roots = tuple(m.replace(".", "/") for m in class_mods_refused)
    _dict_get = dict.get
    # Whatever name they are found under: the constructors of code, functions, bound
    # methods and method wrappers, and type itself (a class built from the pickle's own
    # data). Modules are refused apart, just before.
    code_types = (type((lambda: 0).__code__), _FunctionType, type,
                  type(_dict_get.__get__), type(int.__add__), type((lambda: 0).__get__(0)))
    code_type_names = frozenset(["CodeType", "FunctionType", "LambdaType", "MethodType",
                                 "ModuleType", "CellType", "FrameType", "TracebackType"])

    def loaded_dict(modname):
        """The namespace of a module loaded already (never imported for asking), or None."""
        m = sget(_modules, modname)
        if m is None or not issubclass(type(m), _ModuleType):
            return None  # not a module: its __dict__ (a property) would be its own code
        d = _module_dict(m)
        return d if type(d) is dict else None

    def experiment_module(modname, d=None):
        """Whether modname is the experiment's (d: its namespace when already read)."""
        if modname == "__main__":
            return True
        if d is None:
            d = loaded_dict(modname)
        fn = sget(d, "__file__") if d is not None else None
        return type(fn) is str and bool(exp_dir) and fn.startswith(exp_dir + "/")

    _BaseException = BaseException

    def exception_class(obj):
        """An exception class (of a module loaded already: a module is not imported for
        it): a worker's error comes back to the pool pickled (ValueError, a library's own),
        and building one runs no code of the pickle's choosing."""
        try:
            return issubclass(type(obj), type) and issubclass(obj, _BaseException)
        except Exception:
            return False

    _type_module = type.__dict__["__module__"].__get__

    def defined_in(obj):
        """The module a class, or the class of an object, says it was defined in; None when
        it says nothing plain. Read off type's own descriptor, so no class's code runs."""
        cls = obj if issubclass(type(obj), type) else type(obj)
        check_class_dict(cls, "__module__")
        try:
            m = _type_module(cls)
        except Exception:
            return None
        return m if type(m) is str else None

    def allowed_home(m):
        """A module whose classes unpickle: one of class_mods (not the refused ones), or the
        experiment's own."""
        if m is None:
            return False
        path = m.replace(".", "/")
        if _under(path, refused_roots):
            return False
        return _under(path, class_roots) or experiment_module(m)

    def import_for_pickle(modname):
        """Import an allowed module that find_class is about to import, so that the name is
        judged on what it is (a function, a re-export, a class defined elsewhere), as in a
        loaded module; by a class-like name alone, `datetime.date` was refused and any
        capitalised callable passed. The import runs on a thread of its own (isolated): the
        import system is the experiment's to change (a finder on sys.meta_path, a function
        of importlib's), and what it runs must find no frame of the gate's under it. Its
        events are judged as any thread's (the pickle chose no argument of it but the
        module's name, which the experiment could import itself). False: it failed, and
        find_class will fail the same way."""
        ok, r = isolated(_import, (modname,))
        if not ok:
            if type(r) is PermissionError:
                raise clean(r)  # refused while importing: so is the pickle
            return False
        return sget(_modules, modname) is not None

    # Verdicts per (module, name), kept: a DataLoader's parent judges the same nine names for
    # every batch, and each judging reads sys.modules and a namespace by scanning. What the
    # list guards is an experiment whose code is not hostile loading a pickle that is
    # (torch.load of a downloaded checkpoint); code that swaps a module's names after the
    # first judging could as well call what it swapped in itself.
    verdicts = {}

    def pickle_ok(modname, name):
        if type(modname) is not str or type(name) is not str:
            return False
        key = (modname, name)
        v = verdicts.get(key)
        if v is not None:
            return v
        v, final = pickle_verdict(modname, name)
        if final and len(verdicts) < 4096:
            verdicts[key] = v
        return v

    _staticmethod_func = staticmethod.__dict__["__func__"].__get__

    def experiment_member(d, name):
        """A dotted name of the experiment's module that walks only its own classes (of
        type itself: a metaclass could answer find_class's getattr otherwise) to one of
        them, a function of its files, or a staticmethod of one."""
        parts = name.split(".")
        if any(not identifier(p) or p.startswith("__") for p in parts):
            return False
        obj = sget(d, parts[0])
        def own_class(c):
            # a spawned child runs main.py as __mp_main__, whose classes say so
            home = defined_in(c) if type(c) is type else None
            return type(home) is str and experiment_module(home)

        for p in parts[1:]:
            if not own_class(obj):
                return False
            obj = _class_attr(obj, p)
            if type(obj) is staticmethod:
                obj = _staticmethod_func(obj)
        if type(obj) is type:
            return own_class(obj)
        if type(obj) is _FunctionType:
            fn = _func_code(obj).co_filename
            if type(fn) is str and fn and not fn.startswith("/"):
                fn = p_abspath(fn)
            return type(fn) is str and bool(exp_dir) and fn.startswith(exp_dir + "/")
        return False

    def pickle_lookup(modname, name, d, obj):
        """(object, None) for what find_class will find under name: obj, found in modname's
        namespace d already, or looked up once the module is imported (d None: not loaded);
        or (None, (verdict, final)) when it finds nothing: find_class fails on its own then,
        unless the module answers for the names it lacks (a module's __getattr__)."""
        if d is None:
            if not import_for_pickle(modname):
                return None, (True, False)  # find_class's own import fails the same way
            d = loaded_dict(modname)
            if d is None:
                return None, (False, False)
            obj = sget(d, name)
        if obj is None:
            return None, (sget(d, "__getattr__") is None, False)
        return obj, None

    def listed_verdict(modname, name):
        """A listed reconstruction function or class, as what it holds now: defined in its
        module's package (a class by its __module__, a function by its file, a builtin by
        the module it belongs to); not the experiment's object under a listed name."""
        d = loaded_dict(modname)
        obj, early = pickle_lookup(modname, name, d, sget(d, name) if d is not None else None)
        if early is not None:
            return early
        top = modname.split(".")[0]
        if top == "__builtin__" or top == "copy_reg":
            top = "builtins" if top == "__builtin__" else "copyreg"
        # kept like every verdict on a name found (decisions.md: a name rebound after its
        # first judging is not judged again)
        if issubclass(type(obj), type):
            home = defined_in(obj)
            return type(home) is str and home.split(".")[0] == top, True
        if type(obj) is _FunctionType:
            fn = _func_code(obj).co_filename
            return type(fn) is str and kind(fn) in ("s", "l") and \
                ("/" + top + "/" in fn or fn.endswith("/" + top + ".py") or
                 fn == "<frozen " + top + ">"), True
        if type(obj) is _bf:
            me = _bf_self(obj)
            if not issubclass(type(me), _ModuleType):
                return False, True
            mn = sget(_module_dict(me), "__name__")
            return type(mn) is str and mn.split(".")[0] == top, True
        return False, True

    # Values a pickle names in builtins (an index's `...`), judged by identity: the
    # experiment can bind another object to the name
    builtin_singletons = {"Ellipsis": Ellipsis, "NotImplemented": NotImplemented}

    def pickle_verdict(modname, name):
        """(verdict, final): final when it holds for later judgings too (not a module that
        was not loaded yet, failed to import, or lacked the name)."""
        if modname == "builtins" and (name == "Ellipsis" or name == "NotImplemented"):
            d = loaded_dict(modname)
            # not kept: the next judging must see a name bound to another object since
            return d is not None and sget(d, name) is builtin_singletons[name], False
        if not is_one(type(sget(_modules, modname)), (type(None), _ModuleType)):
            # a module of a class of its own: find_class's getattr runs its descriptors,
            # which say what they like whatever its namespace holds
            return False, True
        if (modname, name) in pickle_funcs or (
                name.startswith(("rebuild", "_rebuild")) and
                _under(modname.replace(".", "/"), rebuild_roots)):
            # judged by what the name holds: the experiment can bind another object to it
            # (collections.Counter = getattr)
            return listed_verdict(modname, name)
        if "." in name:
            # attribute chains (os.system through a module's names), but for the
            # experiment's own nested classes and static functions (Pool.map(Model.st))
            d = loaded_dict(modname)
            return (d is not None and experiment_module(modname, d) and
                    experiment_member(d, name)), d is not None
        if name.startswith("__"):
            # A module's __builtins__ is a dict of exec, __import__ and getattr; no pickle
            # names a dunder but those on the list above.
            return False, True
        # Each dict read once: a read is a scan (sget)
        d = loaded_dict(modname)
        obj = sget(d, name) if d is not None else None
        if exception_class(obj):
            return True, True
        mod_ok = _under(modname.replace(".", "/"), class_roots)
        if _under(modname.replace(".", "/"), refused_roots) or \
                _under((modname + "." + name).replace(".", "/"), refused_roots) or \
                name in code_type_names:
            return False, True
        if obj is not None and modname in pure_module_names and pure_callable(obj):
            return True, True  # len, math.sqrt, operator.add: judged by what they are
        exp_mod = not mod_ok and experiment_module(modname, d)
        if not (mod_ok or exp_mod):
            return False, d is not None
        if d is None or obj is None:
            # Only a library's module is imported here: the experiment's is known as such
            # only once loaded (experiment_module), so its code is never imported for this.
            obj, early = pickle_lookup(modname, name, d, obj)
            if early is not None:
                return early
        if type(obj) is type(sys):
            return False, True  # a module: BUILD would write into its namespace
        if any(obj is t for t in code_types):
            return False, True  # a pickle that builds code runs it under any file name
        if issubclass(type(obj), type):
            # Taken where it is defined, not where it is found: collections._itemgetter is
            # operator's itemgetter, and a name the experiment imported (CDLL, a library's
            # class) is not the experiment's class.
            return allowed_home(defined_in(obj)), True
        if exp_mod and type(obj) is _FunctionType:
            fn = obj.__code__.co_filename
            if type(fn) is str and fn and not fn.startswith("/"):
                fn = p_abspath(fn)  # Python 3.8 names the script as it was given (main.py)
            # The experiment's own function (multiprocessing pickles it by name), not a
            # name it imported from elsewhere.
            return type(fn) is str and (fn.startswith(exp_dir + "/") if exp_dir else False), \
                True
        if callable(obj):
            return pure_callable(obj), True
        # A value found by name (torch.float32, a torch.dtype): of a class of an allowed
        # module, never a dict, list or tuple of the builtins' or a module's callables.
        return allowed_home(defined_in(obj)) and \
            not issubclass(type(obj), (dict, list, tuple, set, frozenset)), True

    # Callables a pool's task names (Pool.map(len, ...), map(math.sqrt), starmap(operator.add),
    # map(np.sum), map(torch.sigmoid)): computing functions, judged by what they are, never
    # by a name they carry (a builtin's __module__ is writable). Not getattr, attrgetter,
    # methodcaller or anything that reaches or runs other objects: with those, a pickle's
    # data walks from an allowed object to exec.
    import math as _math, cmath as _cmath
    _bf = type(len)
    _bf_self = _bf.__dict__["__self__"].__get__
    _bf_name = _bf.__dict__["__name__"].__get__
    _bf_module = _bf.__dict__["__module__"].__get__
    pure_modules = (
        (sys.modules["builtins"], frozenset(
            "abs all any ascii bin callable chr divmod format hash hex id isinstance "
            "issubclass len max min oct ord pow print repr round sorted sum".split())),
        (_operator, frozenset(
            "abs add and_ concat contains countOf eq floordiv ge gt index indexOf inv "
            "invert is_ is_not le lshift lt matmul mod mul ne neg not_ or_ pos pow rshift "
            "sub truediv truth xor".split())),
        (_math, None), (_cmath, None))
    pure_roots = ("numpy", "torch")
    pure_module_names = frozenset(["builtins", "math", "cmath", "_operator", "operator"])

    def pure_library_path(path):
        """Whether a file is numpy's or torch's (not one of the refused subsystems)."""
        if type(path) is not str or kind(path) != "l":
            return False
        for r in lib_roots:
            if path.startswith(r + "/"):
                rel = path[len(r) + 1:]
                return _under(rel.rsplit("/", 1)[0] if "/" in rel else rel, pure_roots) and \
                    not _under(rel, refused_roots)
        return False

    def public_path(fn):
        for r in lib_roots:
            if fn.startswith(r + "/"):
                parts = fn[len(r) + 1:].split("/")
                return not any(p.startswith("_") and p != "__init__.py" for p in parts)
        return False

    def pure_callable(obj):
        t = type(obj)
        if t is _bf:
            me = _bf_self(obj)
            if me is None:
                # a static builtin of a C type (torch's _VariableFunctions)
                m = _bf_module(obj)
                return type(m) is str and _under(m.replace(".", "/"), pure_roots) and \
                    not _under(m.replace(".", "/"), refused_roots)
            for mod, names in pure_modules:
                if me is mod:
                    return names is None or _bf_name(obj) in names
            return False
        if t is _FunctionType:
            fn = _func_code(obj).co_filename
            if fn == "<__array_function__ internals>":  # numpy's dispatchers (np.sum)
                m = obj.__module__
                return type(m) is str and _under(m.replace(".", "/"), ("numpy",))
            # a public function of numpy or torch (F.relu), not a private helper: those
            # include name resolvers (numpy.core._ufunc_reconstruct, torch._utils.
            # _import_dotted_name) that import and return whatever a pickle names
            name = _func_code(obj).co_name
            return pure_library_path(fn) and type(name) is str and \
                not name.startswith("_") and public_path(fn)
        if issubclass(t, type) or is_one(t, code_types):
            return False
        # an instance of an allowed library class (a numpy ufunc, a torch module)
        return allowed_home(defined_in(obj))

    # A pickle multiprocessing reads from its own pipes and queues was written by another
    # process of this same run: what it names (getattr(obj, "method") for a bound method, an
    # enum member, str.upper, a torch builtin) the experiment's code could call itself. The
    # list guards pickles from outside (a file, a checkpoint); there getattr stays refused, as
    # with it a pickle's data walks from an allowed object to any other.
    ipc_readers = ("/multiprocessing/connection.py", "/multiprocessing/queues.py",
                   "/multiprocessing/spawn.py", "/multiprocessing/forkserver.py",
                   "/multiprocessing/managers.py", "/torch/multiprocessing/queue.py")

    def ipc_pickle(frame):
        if frame is None:
            return False
        fn, _ = code_names(frame)
        return fn is not None and fn.endswith(ipc_readers) and fkind_raw(frame) != "x"

    def ipc_mark(frame):
        """From here on, what a load at this line calls is judged as the experiment's: the
        names a pickle from its pipes may use (getattr chains among them) reach anything the
        experiment's code could call, and are held to what its code may do."""
        fn, _ = code_names(frame)
        lines = _dict_get(ipc_sites, fn)
        if lines is None:
            if len(ipc_sites) >= 64:
                return
            lines = ipc_sites[fn] = set()
        if len(lines) < 64:
            lines.add(frame.f_lineno)

    # ... and what a pool's task names by reference, of the standard library's computing
    # modules (Pool.map(json.loads), map(os.path.basename), map(re.escape), zlib.crc32,
    # operator.itemgetter(0)) and PyYAML's safe functions: judged by what the name finds,
    # which must be that module's own function (a name the experiment rebound to one of its
    # own, or to os.system, is not). Only there: in a pickle from outside these stay refused,
    # as json.load reads whatever object the pickle hands it.
    ipc_fn_mods = frozenset(
        "json re posixpath string textwrap statistics fnmatch base64 binascii zlib _struct "
        "struct bisect _bisect heapq _heapq unicodedata html difflib shlex".split())
    ipc_fn_only = {"yaml": frozenset(["safe_load", "safe_load_all", "safe_dump",
                                      "safe_dump_all"])}
    _itemgetter = _operator.itemgetter

    def ipc_function(modname, name):
        if type(modname) is not str or type(name) is not str or "." in name or \
                name.startswith("_"):
            return False
        only = _dict_get(ipc_fn_only, modname)
        if modname == "operator" and name == "itemgetter":
            d = loaded_dict(modname)
            return d is not None and sget(d, name) is _itemgetter
        if modname not in ipc_fn_mods and (only is None or name not in only):
            return False
        mod = sget(_modules, modname)
        d = loaded_dict(modname)
        obj = sget(d, name) if d is not None else None
        if obj is None or mod is None:
            return False
        t = type(obj)
        if t is _bf:
            return _bf_self(obj) is mod  # zlib.crc32, _heapq.heappush: the module's own
        if t is not _FunctionType:
            return False
        fn = _func_code(obj).co_filename
        path = modname.replace(".", "/")
        # posixpath is frozen into 3.11 and later: "<frozen posixpath>"
        return type(fn) is str and kind(fn) in ("s", "l") and \
            (fn.endswith(("/" + path + ".py", "/" + path + "/__init__.py")) or
             fn == "<frozen " + modname + ">")

    # Made in the world, keeping their closures (which hold only what is listed here, none
    # of it the gate's): see make_ipc_getattr.
    def in_world_closed(fn, name):
        code = fn.__code__
        sealed_codes[id(code)] = code
        f = _FunctionType(code, world, name, None, fn.__closure__)
        f.__qualname__ = name
        return f

    _MethodType = type((lambda: 0).__get__(0))
    _bound_slot_t = type((0).__add__)
    _descr_ts = (type(list.append), type(int.__add__), type(dict.__dict__["fromkeys"]))
    ipc_ok_dunders = frozenset(
        "__%s__" % n for n in (
            "add sub mul matmul truediv floordiv mod divmod pow lshift rshift and xor or "
            "radd rsub rmul rmatmul rtruediv rfloordiv rmod rdivmod rpow rlshift rrshift "
            "rand rxor ror neg pos abs invert lt le eq ne gt ge len contains getitem iter "
            "next reversed hash bool int float complex index str repr format round trunc "
            "floor ceil").split())
    _missing = object()
    enum_member = in_world_closed(make_enum_member((
        type.__dict__["__mro__"].__get__, _type_dict, type, _missing)), "_labbox_enum_member")
    ipc_getattr = in_world_closed(make_ipc_getattr((
        getattr, type, str, issubclass, _MethodType, _FunctionType, _bf, _bound_slot_t,
        _descr_ts, _ModuleType, classmethod, type.__dict__["__mro__"].__get__, _type_dict,
        ipc_ok_dunders, sys.audit, _missing, enum_member)), "_labbox_getattr")
    ipc_getattr.__module__ = "multiprocessing.reduction"
    ipc_getattr_code = _func_code(ipc_getattr)
    _r_method, _r_builtin, _r_slot, _r_descr = [
        in_world_closed(f, f.__name__)
        for f in make_ipc_reducers(ipc_getattr, type, issubclass, _ModuleType)]
    ipc_enum_override = in_world_closed(make_ipc_enum_override(
        ipc_getattr, getattr, type, sys.modules.get), "reducer_override")
    ipc_reducers = {_MethodType: _r_method, _bf: _r_builtin, _bound_slot_t: _r_slot}
    for _t in _descr_ts:
        ipc_reducers[_t] = _r_descr
    ipc_patched = []

    def ipc_patch():
        """Once multiprocessing.reduction is loaded whole: its pickler sends bound methods and
        method descriptors with labbox's getattr, which the module then names
        (multiprocessing.reduction._labbox_getattr, where a reader finds it)."""
        if ipc_patched:
            return
        d = loaded_dict("multiprocessing.reduction")
        if d is None or sget(d, "AbstractReducer") is None:
            return  # not loaded, or still loading: its own register() calls come later
        fp = sget(d, "ForkingPickler")
        if type(fp) is not type:
            return
        extra = _class_attr(fp, "_extra_reducers")
        if type(extra) is not dict:
            return
        ipc_patched.append(True)
        # On a thread of their own, as guard_sqlite's: a dict the experiment can fill hashes
        # and compares its keys as it is written.
        isolated(dict.update, (extra, ipc_reducers))
        if _class_attr(fp, "reducer_override") is None:
            isolated(setattr, (fp, "reducer_override", ipc_enum_override))
        isolated(dict.__setitem__, (d, "_labbox_getattr", ipc_getattr))

    file_getattr = in_world_closed(make_file_getattr((
        getattr, type, str, issubclass, _MethodType, _FunctionType,
        type.__dict__["__mro__"].__get__, _type_dict, sys.audit, _missing, enum_member)),
        "_labbox_getattr")
    file_getattr.__module__ = "copyreg"
    file_getattr_code = _func_code(file_getattr)
    file_getattr_name = ("copyreg", "_labbox_getattr")
    optim_roots = tuple(r + "/torch/optim" for r in lib_roots)

    def file_getattr_patch():
        """As pickle is imported: __builtin__.getattr renamed to labbox's, which copyreg (which
        pickle imports) holds. Set on a thread of its own, as ipc_patch's."""
        if loaded_dict("copyreg") is None:
            isolated(_import, ("copyreg",))
        d = loaded_dict("copyreg")
        if d is None or len(compat_seen) < 2 or type(compat_seen[0]) is not dict:
            return
        isolated(dict.__setitem__, (d, file_getattr_name[1], file_getattr))
        isolated(dict.__setitem__, (compat_seen[0], ("__builtin__", "getattr"),
                                    file_getattr_name))

    def file_getattr_ours(modname, name):
        if (modname, name) != file_getattr_name:
            return False
        d = loaded_dict(modname)
        return d is not None and sget(d, name) is file_getattr

    def on_file_getattr(event, args, frame):
        if frame is None or frame.f_code is not file_getattr_code:
            return  # sys.audit of the name from anywhere else says nothing
        tname, name, what, f = (tuple(args) + (None, None, None, None))[:4]
        if what == "member":
            return
        if what is None:
            fn = _func_code(f).co_filename if type(f) is _FunctionType else None
            k = kind(fn)
            if (k == "x" and exp_dir and _under(fn, (exp_dir,))) or \
                    (k in ("s", "l") and _under(fn, optim_roots)):
                return
            what = "a method whose code is neither torch.optim's nor the experiment's (%s)" \
                % summary(fn)
        refuse(event, (tname, name), frame, "gate.pickle", "a pickle's getattr of what no "
               "checkpoint holds",
               "getattr(%s, %s) in a pickle: %s (an enum's member, or a method of "
               "torch.optim's or the experiment's own classes bound to its object, passes)"
               % (summary(tname), summary(name), summary(what)))

    def on_ipc_getattr(event, args, frame):
        if frame is None or frame.f_code is not ipc_getattr_code:
            return  # sys.audit of the name from anywhere else says nothing
        what = (tuple(args) + (None, None, None))[:3]
        refuse(event, what[:2], frame, "gate.pickle", "a pickle's getattr of what is no method",
               "getattr(%s, %s) in a pickle: %s (only a method of the object's own class "
               "passes, as multiprocessing sends one)" % (
                   summary(what[0]), summary(what[1]), summary(what[2])))

    # What a Manager's server process is handed under spawn and forkserver (SyncManager's
    # registry: the types it makes on the clients' behalf): the queues and synchronisation
    # primitives of the standard library, which hold and run nothing of their own. Judged by
    # what the name finds: a class defined in that module, RLock threading's own function,
    # Lock _thread's builtin; only on multiprocessing's pipes.
    ipc_sync_classes = {"queue": frozenset(["Queue", "LifoQueue", "PriorityQueue",
                                            "SimpleQueue"]),
                        "threading": frozenset(["Event", "Semaphore", "BoundedSemaphore",
                                                "Condition", "Barrier"])}

    # ... and the registry's functions: RLock's factory, the Array of a manager, and the
    # proxy maker for the types registered without a proxy of their own (a Queue's).
    ipc_sync_functions = {("threading", "RLock"): "/threading.py",
                          ("multiprocessing.managers", "AutoProxy"): "/multiprocessing/managers.py",
                          ("multiprocessing.managers", "Array"): "/multiprocessing/managers.py"}

    def ipc_sync_type(modname, name):
        if type(modname) is not str or type(name) is not str:
            return False
        d = loaded_dict(modname)
        obj = sget(d, name) if d is not None else None
        if obj is None:
            return False
        names = _dict_get(ipc_sync_classes, modname)
        if names is not None and name in names:
            return issubclass(type(obj), type) and defined_in(obj) == modname
        home = _dict_get(ipc_sync_functions, (modname, name))
        if home is not None:
            fn = _func_code(obj).co_filename if type(obj) is _FunctionType else None
            return type(fn) is str and fn.endswith(home) and kind(fn) == "s"
        if (modname, name) in (("_thread", "allocate_lock"), ("threading", "Lock"),
                               ("_thread", "RLock")):
            return type(obj) is _bf and _bf_self(obj) is sget(_modules, "_thread") and \
                _bf_name(obj) in ("allocate_lock", "RLock")
        return False

    # pickle's Python 2 names (protocol 0 to 2: torch.save writes 2) are renamed after the
    # find_class event, through _compat_pickle's tables, which are dicts the experiment can
    # change: the name the load gets is judged too. The C unpickler keeps the tables it found
    # when _pickle was first imported, so they are taken at that import (the gate imports
    # _compat_pickle first, so both hold the same dicts) and at every find_class.
    import itertools as _itertools
    _chain = _itertools.chain.from_iterable
    compat_seen = []  # [NAME_MAPPING, IMPORT_MAPPING] dicts seen, in pairs

    compat_module = []  # _compat_pickle, once seen: its namespace is read without a scan

    def compat_take():
        m = compat_module[0] if compat_module else sget(_modules, "_compat_pickle")
        if not issubclass(type(m), _ModuleType):
            return
        if not compat_module and type(m) is _ModuleType:
            compat_module.append(m)
        d = _module_dict(m)
        if type(d) is not dict:
            return
        pair = (sget(d, "NAME_MAPPING"), sget(d, "IMPORT_MAPPING"))
        for i in range(0, len(compat_seen), 2):
            if compat_seen[i] is pair[0] and compat_seen[i + 1] is pair[1]:
                return
        if len(compat_seen) < 16:
            compat_seen.extend(pair)

    _is = _operator.is_
    compat_cache = [None, {}]  # [identity snapshot of the tables, {(module, name): names}]

    def compat_snapshot():
        snap = []
        for t in compat_seen:
            if type(t) is not dict:
                return None
            snap.append(kept((list(t), list(_dict_values(t)))))
        return snap

    def compat_same(old):
        """Whether every table holds the very keys and values it held (by identity: no
        comparison runs the experiment's code)."""
        if old is None or len(old) != len(compat_seen):
            return False
        for t, (ks, vs) in zip(compat_seen, old):
            if type(t) is not dict or len(t) != len(ks):
                return False
            if not all(map(_is, kept(list(t)), ks)) or \
                    not all(map(_is, kept(list(_dict_values(t))), vs)):
                return False
        return True

    def compat_names(modname, name):
        """The (module, name) pairs the unpickler may load for this find_class."""
        compat_take()
        if compat_same(compat_cache[0]):
            hit = compat_cache[1].get((modname, name))
            if hit is not None:
                return hit
        else:
            kept(compat_cache[0])
            compat_cache[0] = compat_snapshot()
            compat_cache[1] = {}
        out = compat_scan(modname, name)
        if len(compat_cache[1]) < 4096:
            compat_cache[1][(modname, name)] = out
        return out

    def compat_scan(modname, name):
        out = []
        for i in range(0, len(compat_seen), 2):
            nm, im = compat_seen[i], compat_seen[i + 1]
            if type(nm) is not dict or type(im) is not dict:
                raise _Tampered("_compat_pickle")
            keys = kept(list(nm))
            # exact tuples of exact strs: a comparison then runs no code of the experiment's
            if not set(map(type, keys)) <= {tuple} or \
                    not set(map(type, _chain(keys))) <= {str}:
                raise _Tampered("_compat_pickle")
            key = (modname, name)
            hits = list(map(key.__eq__, keys))
            if hits.count(True):
                v = nm[keys[hits.index(True)]]
                if type(v) is not tuple or len(v) != 2 or type(v[0]) is not str or \
                        type(v[1]) is not str:
                    raise _Tampered("_compat_pickle")
                out.append(v)
            else:
                m2 = sget(im, modname)
                if m2 is not None:
                    if type(m2) is not str:
                        raise _Tampered("_compat_pickle")
                    out.append((m2, name))
        return out

    def module_entry(modname):
        """"absent", "blocked" (None: its import raises ImportError) or "other": what
        sys.modules holds for modname, in one scan, read as sget reads it (and refused
        as sget refuses a key that is not one exact str)."""
        items = kept(list(_dict_items(_modules)))
        hits = list(map(modname.__eq__, map(_first, items)))
        n = hits.count(True)
        if n == 0:
            return "absent"
        k, v = items[hits.index(True)]
        if n > 1 or type(k) is not str:
            raise _Tampered(modname)
        return "blocked" if v is None else "other"

    def py2_module_absent(modname):
        """Whether a Python 2 module name the unpickler renames (__builtin__, copy_reg) can
        load nothing here: then only the renamed name is loaded. A module of that name that
        is loaded is judged as any (False). One that is not is made unimportable first, by
        None in sys.modules (set on a thread of its own, as the dict's keys are the
        experiment's to choose): a finder or a file of the experiment's that would make one
        later cannot, and a pickle of protocol 3 or more, which is not renamed, fails to
        import it. Code that tries `import __builtin__` gets the ImportError it would get
        without one."""
        if "." in modname:
            return False
        entry = module_entry(modname)
        if entry != "absent":
            return entry == "blocked"
        ok, spec = isolated(find_spec_fn, (modname,))
        if not ok or spec is not None:
            return False
        isolated(block_module, (modname,))
        return module_entry(modname) == "blocked"

    def find_spec_fn(modname):
        return _import("importlib.util", None, None, ["find_spec"]).find_spec(modname)

    def block_module(modname):
        _modules[modname] = None

    def on_find_class(event, args, frame):
        modname, name = (tuple(args) + (None, None))[:2]
        renamed = False
        if type(modname) is str and type(name) is str:
            for m2, n2 in compat_names(modname, name):
                if (m2, n2) == (modname, name):
                    continue
                if file_getattr_ours(m2, n2):
                    renamed = True
                    continue
                if not pickle_ok(m2, n2):
                    refuse(event, args[:2], frame, "gate.pickle",
                           "pickle find_class outside the allowlist",
                           "%s.%s, which the unpickler renames to %s.%s for a Python 2 "
                           "pickle, is not a class or reconstruction function labbox allows"
                           % (summary(modname), summary(name), summary(m2), summary(n2)))
                    return
                renamed = True
        # A protocol 2 pickle (torch.save's default) names the builtins __builtin__'s: the
        # name judged is the one the unpickler loads, when the original cannot be loaded
        if renamed and py2_module_absent(modname):
            return
        ipc = ipc_pickle(frame)
        if ipc:
            ipc_patch()
            if modname == "multiprocessing.reduction" and name == "_labbox_getattr":
                m = sget(_modules, modname)
                d = _module_dict(m) if type(m) is _ModuleType else None
                if type(d) is dict and sget(d, name) is ipc_getattr:
                    ipc_mark(frame)
                    return
        if not pickle_ok(modname, name):
            if ipc and (ipc_function(modname, name) or ipc_sync_type(modname, name)):
                ipc_mark(frame)
                return
            detail = "%s.%s is not a class or reconstruction function labbox allows to " \
                "unpickle" % (summary(modname), summary(name))
            if ipc and modname == "builtins" and name == "getattr":
                detail += "; multiprocessing's own pickler sends bound methods with " \
                    "labbox's getattr, which allows only methods"
            handler = pool_result_handler(frame) if ipc and enforce else None
            if handler is None:
                refuse(event, args[:2], frame, "gate.pickle",
                       "pickle find_class outside the allowlist", detail)
                return
            try:
                refuse(event, args[:2], frame, "gate.pickle",
                       "pickle find_class outside the allowlist", detail)
            except PermissionError as e:
                # a copy with no traceback: e's holds the gate's own frames
                pool_fail_pending(handler, clean(PermissionError(*e.args)))
                raise

    # A pool's result thread takes any OSError for its pipe closing and ends: after a refused
    # result every task of the pool would wait for ever (until the budget). The refusal is
    # handed to the pool's pending tasks instead, so map/apply/imap raise it where the
    # experiment waits, as a worker's own exception is raised. The pool's code (the tasks'
    # _set, their error callbacks) runs on a thread of its own, as every call the gate makes
    # of code the experiment can change.
    def pool_result_handler(frame):
        f, depth = frame, 0
        while f is not None and depth < 16:
            code = f.f_code
            if code.co_name == "_handle_results" and fkind_raw(f) == "s" and \
                    type(code.co_filename) is str and \
                    code.co_filename.endswith("/multiprocessing/pool.py"):
                return f
            f, depth = f.f_back, depth + 1
        return None

    # Made in the world (no link to the gate on its thread's stack, where the pool's code
    # and the experiment's error callbacks run): see make_ipc_getattr.
    def make_fail_pending(tools):
        def _labbox_fail_pending(cache, err):
            values, list_, getattr_, type_, int_, range_ = tools
            for job in list_(values(cache)):
                left = getattr_(job, "_number_left", None)
                if type_(left) is int_ and left > 0:
                    for _ in range_(left):  # a map is ready once each of its chunks is in
                        job._set(0, (False, err))
                else:
                    job._set(getattr_(job, "_index", 0), (False, err))
        return _labbox_fail_pending

    fail_pending = in_world_closed(make_fail_pending((
        dict.values, list, getattr, type, int, range)), "_labbox_fail_pending")

    def pool_fail_pending(handler, err):
        try:
            cache = sget(handler.f_locals, "cache")
        except Exception:
            return
        if issubclass(type(cache), dict):
            isolated(fail_pending, (cache, err))

    # ---- imports -----------------------------------------------------------------------------
    banned = {}
    for m in ("subprocess", "asyncio.subprocess", "commands", "popen2", "sh", "pexpect",
              "_posixsubprocess"):
        banned[m] = ("LB102", "subprocess")
    # A subinterpreter runs a string of source with no frame above it, which the gate takes
    # for the entry point's own code: the interpreter's modules are refused with exec's rule.
    for m in ("runpy", "code", "codeop", "_xxsubinterpreters", "_xxinterpchannels",
              "_interpreters", "_interpchannels", "_interpqueues", "interpreters",
              "concurrent.interpreters", "test.support.interpreters"):
        banned[m] = ("LB103", "dynamic code (eval, exec, compile)")
    for m in ("imp", "zipimport", "_imp"):
        banned[m] = ("LB104", "dynamic import")
    for m in ("ctypes", "_ctypes", "cffi", "_cffi_backend"):
        banned[m] = ("LB106", "native code (ctypes, cffi)")
    banned["pty"] = ("LB107", "pseudo-terminals (pty)")
    if not network:
        # socket itself is not banned: gethostname, its exception classes and constants are
        # ordinary code (the check judges socket by member); a socket other than AF_UNIX is
        # refused as it is made (socket.__new__), and the sandbox's seccomp backs that.
        for m in ("_socket", "socketserver", "urllib.request", "urllib2",
                  "http.client", "http.server", "httplib", "ftplib", "smtplib", "telnetlib",
                  "poplib", "imaplib", "nntplib", "xmlrpc", "requests", "httpx", "aiohttp",
                  "urllib3", "pycurl", "websocket", "websockets", "paramiko", "webbrowser",
                  "wget"):
            banned[m] = ("LB105", "network access")
    def internals_reader(name):
        """CPython's test modules (pyenv and python.org builds install them) read a
        function's keyword defaults, closure and globals with no audit event."""
        # any part: an extension's init is PyInit_ of the last, so x._testcapi loads it too
        return any(p.startswith("_test") or p in ("_ctypes_test", "_xxtestfuzz")
                   for p in name.split("."))

    sqlite_asked = []
    ipc_modules = ("multiprocessing.", "torch.multiprocessing", "concurrent.futures.process")

    def on_import(event, args, frame):
        name = args[0] if args else None
        if type(name) is not str:
            return
        if not ipc_patched and name.startswith(ipc_modules):
            # multiprocessing's pipes, queues, pools and processes are each a module of its
            # own, imported as first used and after multiprocessing.reduction is whole
            ipc_patch()
        if (name == "_pickle" or name == "pickle") and not compat_seen:
            # before _pickle takes _compat_pickle's tables: the same dicts as the gate's
            if loaded_dict("_compat_pickle") is None:
                isolated(_import, ("_compat_pickle",))
            compat_take()
            file_getattr_patch()
        if name == "sqlite3.dbapi2" and not sqlite_asked:
            sqlite_asked.append(name)  # once: guard_sqlite adds _sqlite3 when it is guarded
            guard_sqlite()
        if name in installed_guards:
            # a module the gate guards, loaded again (taken out of sys.modules first)
            refuse(event, (name,), frame, "gate.tamper", "access to the interpreter's insides",
                   "a second copy of a module the gate guards")
            return
        if internals_reader(name):
            # whichever frame asks: a library's may be calling what it was handed
            refuse(event, (name,), frame, "gate.tamper", "access to the interpreter's insides",
                   "a test module of CPython's, which reads functions' insides unaudited")
            return
        hit = None
        parts = name.split(".")
        for i in range(len(parts), 0, -1):
            hit = banned.get(".".join(parts[:i]))
            if hit:
                break
        if not hit and len(parts) > 1 and parts[-1].startswith("_"):
            # a C module of the interpreter's under a package name (x._ctypes, x._socket):
            # its init is PyInit_ of the last part, so it is that module
            hit = banned.get(parts[-1])
        if not hit:
            return
        if loads_for_experiment(frame):
            refuse(event, (name,), frame, hit[0], hit[1], "import of %s" % name)

    handlers = {
        "os.system": on_process, "os.exec": on_process, "os.posix_spawn": on_process,
        "os.spawn": on_process, "os.forkpty": on_process, "subprocess.Popen": on_process,
        "os.startfile": on_process, "os.fork": on_fork,
        "socket.connect": on_socket, "socket.bind": on_socket, "socket.sendto": on_socket,
        "socket.sendmsg": on_socket, "socket.__new__": on_socket_new,
        "socket.getaddrinfo": on_lookup, "socket.gethostbyname": on_lookup,
        "socket.gethostbyaddr": on_lookup, "socket.getnameinfo": on_lookup,
        "compile": on_compile, "exec": on_exec, "code.__new__": on_code_new,
        "marshal.loads": on_marshal, "marshal.load": on_marshal,
        "ctypes.dlopen": on_native, "ctypes.dlsym": on_native, "ctypes.dlsym/handle": on_native,
        "ctypes.call_function": on_native, "ctypes.cdata": on_native,
        "ctypes.cdata/buffer": on_native, "ctypes.addressof": on_native,
        "ctypes.string_at": on_native, "ctypes.wstring_at": on_native,
        "ctypes.PyObj_FromPtr": on_tamper,
        "ctypes.get_errno": None, "sqlite3.enable_load_extension": on_sqlite_ext,
        "gc.get_objects": on_tamper, "gc.get_referrers": on_tamper, "gc.get_referents": on_tamper,
        "sys.addaudithook": on_tamper, "sys.settrace": on_tamper, "sys.setprofile": on_tamper,
        "sys._current_frames": on_tamper, "sys._current_exceptions": on_tamper,
        "sys.monitoring.register_callback": on_tamper, "sys.excepthook": on_uncaught,
        "object.__getattr__": on_getattr, "object.__setattr__": on_getattr,
        "pickle.find_class": on_find_class, "import": on_import,
        "labbox.ipc_getattr": on_ipc_getattr,
        "labbox.file_getattr": on_file_getattr,
        "open": on_open, "os.remove": on_path1, "os.rmdir": on_path1, "os.mkdir": on_path1,
        "os.truncate": on_truncate, "os.chmod": on_path1, "os.chown": on_path1,
        "os.utime": on_path1, "os.rename": on_rename, "os.replace": on_rename,
        "os.symlink": on_link, "os.putenv": on_putenv, "os.link": on_link, "sqlite3.connect": on_sqlite_connect,
    }
    handlers = {k: v for k, v in handlers.items() if v is not None}
    watched = frozenset(handlers)
    _getframe = sys._getframe
    _ident = _thread.get_ident
    import gc as _gc
    gc_hold, gc_free, _gc_on, _gc_off, _gc_is, _gc_bf, _gc_ap, _gc_ac = w_gc_ctl(
        [_gc.isenabled(), {}], _thread.RLock(), _gc.disable, _gc.enable, _thread.get_ident,
        sys.is_finalizing)
    os.register_at_fork(before=_gc_bf, after_in_parent=_gc_ap, after_in_child=_gc_ac)
    del _gc_bf, _gc_ap, _gc_ac
    gc_ctl = (gc_hold, gc_free)  # the stand-ins' own
    for _name, _fn in (("enable", _gc_on), ("disable", _gc_off), ("isenabled", _gc_is)):
        _fn.__name__ = _fn.__qualname__ = _name
        _fn.__module__ = "gc"  # pickled by reference as the builtin was
        setattr(_gc, _name, _fn)
    del _name, _fn

    def clean(e):
        """e, to be raised where the experiment can catch it, with no frame of the gate's in
        its traceback or its context: a frame's f_locals (not an audited read) hold the
        gate's closures, and with them its state."""
        e.__traceback__ = None
        e.__context__ = None
        e.__cause__ = None
        return e

    def dispatch(event, args):
        """The hook's work: None, or the refusal to raise. Events raised while the gate
        judges (its own reads of a file) are judged too, not passed: were code of the
        experiment's ever to run inside the gate, what it did would still meet the gate. A
        fault of the gate's, or a judging it cannot finish, refuses: an error the experiment
        can provoke (a recursion limit, a tampered dict) must not be a way through."""
        me = _ident()
        depth = busy.get(me, 0)
        if depth >= 4:
            return clean(PermissionError(errno.EPERM, "labbox runtime gate refused %s: events "
                                         "nested in the gate's own judging" % event))
        busy[me] = depth + 1
        # No collection while the gate judges (the hook holds the collector off around this):
        # a finalizer (__del__) or weakref callback of the experiment's would run inside the
        # gate's frames.
        try:
            try:
                frame = _getframe(2)  # dispatch <- hook <- the audited code
            except ValueError:
                frame = None  # called from C before any Python frame (the entry point's open)
            if frame is not None and entry[0] == "fstring":
                entry[0] = False  # the entry point's compile is over: its code runs
            handlers[event](event, args, frame)
            # (the main program's end asks for nothing, and a refusal there would only be
            # printed as an error of the audit hook's)
            if chan["tampered"] and enforce and event != "object.__getattr__" and \
                    event != "sys.excepthook" and \
                    not (frame is not None and frame.f_globals is gate_globals):
                return clean(PermissionError(
                    errno.EPERM, "labbox runtime gate refused %s: the gate's record was "
                    "tampered with (its channel replaced), so nothing more is allowed" % event))
        except PermissionError as e:
            return clean(e)
        except Exception as e:
            name = "?"
            try:
                name = _name_of(type(e))
                record(event, (), enforce, "gate.error", "the gate could not judge this event",
                       None, name)
            except Exception:
                pass
            if enforce:
                return clean(PermissionError(
                    errno.EPERM, "labbox runtime gate refused %s: gate.error the gate could "
                    "not judge this event (%s) (policy %s)" % (event, name, policy)))
        except BaseException as e:  # KeyboardInterrupt or SystemExit while it judged
            return clean(e)
        finally:
            if depth:
                busy[me] = depth
            else:
                del busy[me]
                # this thread's snapshots, to the hook (never dropped in here)
                g = graves.pop(me, None)
                if g is not None:
                    o = graves_out.get(me)
                    if o is None:
                        graves_out[me] = g
                    else:
                        o.append(g)
        return None

    # No cell: its links to the gate are keyword defaults, and the one to the gate's work is
    # gone from its frame before it raises, so a caught refusal's traceback reaches a frame
    # holding the event, its arguments and the refusal alone.
    signals_pending = []  # signals that came while the gate judged (make_signal_wrap)

    raise_again = id  # no _signal: nothing to raise again (a builtin: no link to the gate)
    try:
        import _signal as _sig_mod
        raise_again = _sig_mod.raise_signal
    except (ImportError, AttributeError):
        pass
    hook = w_hook(watched, dispatch, frozenset(["__kwdefaults__"]),
                  frozenset(["__kwdefaults__", "__defaults__", "__code__"]), type, str,
                  signals_pending, raise_again, graves_out, _tid, gc_hold, gc_free)

    installed_guards = {"gc"}  # its enable, disable and isenabled are the gate's (gc_ctl)
    sys.addaudithook(hook)

    # _posixsubprocess.fork_exec raises no audit event (multiprocessing's spawn and
    # forkserver call it directly): guarded in the module itself. What it lets through is
    # one thing: multiprocessing starting this same interpreter on one of its own entry
    # points (spawn, forkserver, resource tracker) with literal arguments, so that the new
    # process is a gated interpreter like a forked one (CUDA code and Python 3.14's default
    # need spawn or forkserver). Everything else is refused. The original stays in this
    # closure; reaching a closure's cells is what the static check refuses (LB111), and
    # through them the experiment could as well turn the whole gate off.
    mp_entry = frozenset([("multiprocessing.spawn", "spawn_main"),
                          ("multiprocessing.forkserver", "main"),
                          ("multiprocessing.resource_tracker", "main")])
    start_exe = sys.executable if type(sys.executable) is str else ""
    # What the child is told by flags and by the environment is what this interpreter was
    # started with: sys.warnoptions, sys._xoptions and os.environ are the experiment's to
    # change, and -X presite, -X frozen_modules=off with a pycache_prefix, PYTHONPATH
    # without the gate or LD_PRELOAD would start a child the gate does not hold.
    start_flags = frozenset(["-W" + w for w in sys.warnoptions if type(w) is str] +
                            ["-X" + (k if v is True else "%s=%s" % (k, v))
                             for k, v in getattr(sys, "_xoptions", {}).items()
                             if k not in ("presite", "frozen_modules", "pycache_prefix")])
    unsafe_env_names = frozenset([b"GCONV_PATH", b"GETCONF_DIR", b"HOSTALIASES",
                                  b"LOCALDOMAIN", b"LOCPATH", b"MALLOC_TRACE", b"NIS_PATH",
                                  b"NLSPATH", b"RESOLV_HOST_CONF", b"RES_OPTIONS", b"TZDIR",
                                  b"OMP_TOOL_LIBRARIES", b"HOME"])
    # What the experiment may still hand its workers: these change no code that runs.
    child_env_free = frozenset([b"PYTHONHASHSEED", b"PYTHONUNBUFFERED", b"PYTHONIOENCODING",
                                b"PYTHONFAULTHANDLER", b"PYTHONDONTWRITEBYTECODE",
                                b"PYTHONUTF8"])

    def unsafe_env(k):
        if k in child_env_free:
            return False
        return k.startswith((b"PYTHON", b"LD_", b"LABBOX", b"OPENSSL_")) or \
            k in unsafe_env_names

    def env_items():
        # os.environ's own dict, read past its mapping class (whose methods are the
        # experiment's to replace), exact bytes only
        return [(k, v) for k, v in list(_dict_items(_environ_data))
                if type(k) is bytes and type(v) is bytes]

    start_env = [k + b"=" + v for k, v in env_items() if unsafe_env(k)]
    start_exe_b = start_exe.encode(fs_encoding, "surrogateescape")

    def child_env():
        env = [k + b"=" + v for k, v in env_items()
               if not unsafe_env(k) and b"=" not in k]
        return env + start_env

    def mp_literal(t, i, depth=0):
        """The end of the Python literal at t[i:] (a str or bytes, a number, True, False,
        None, or a list, tuple, set or dict of them), or -1. Read by hand, not with ast: an
        import at this point could find an ast.py beside main.py, and ast's node classes are
        the experiment's to change."""
        n = len(t)
        if i >= n or depth > 16:
            return -1
        c = t[i]
        if c == "b" and i + 1 < n and t[i + 1] in "'\"":
            i, c = i + 1, t[i + 1]
        if c == "'" or c == '"':
            j = i + 1
            while j < n and t[j] != c:
                if t[j] == "\\":
                    j += 1
                elif t[j] == "\n":
                    return -1
                j += 1
            return j + 1 if j < n else -1
        if c == "-" or c.isdigit():
            j = i + 1 if c == "-" else i
            k = j
            while k < n and (t[k].isdigit() or t[k] in "._eE"):
                k += 1
            return k if k > j and t[j].isdigit() else -1
        for word in ("True", "False", "None"):
            if t.startswith(word, i):
                j = i + len(word)
                return j if j >= n or not (t[j].isalnum() or t[j] == "_") else -1
        close = {"[": "]", "(": ")", "{": "}"}.get(c)
        if close is None:
            return -1
        j = i + 1
        while True:
            while j < n and t[j] == " ":
                j += 1
            if j < n and t[j] == close:
                return j + 1
            j = mp_literal(t, j, depth + 1)
            if j < 0:
                return -1
            if c == "{" and j < n and t[j] == ":":
                j += 1
                while j < n and t[j] == " ":
                    j += 1
                j = mp_literal(t, j, depth + 1)
                if j < 0:
                    return -1
            while j < n and t[j] == " ":
                j += 1
            if j < n and t[j] == ",":
                j += 1
            elif not (j < n and t[j] == close):
                return -1

    def mp_program(prog):
        """Whether prog is `from M import F; F(literals...)` for one of multiprocessing's
        entry points: the child then runs standard-library code on data, nothing else.
        Arguments are literals, `name=literal` or `**{literal dict}`."""
        if type(prog) is not str or len(prog) > 65536:
            return False
        for mod, fname in mp_entry:
            head = "from %s import %s;" % (mod, fname)
            if prog.startswith(head):
                break
        else:
            return False
        t = prog[len(head):].lstrip(" ")
        if not t.startswith(fname + "(") or not t.endswith(")"):
            return False
        i, n = len(fname) + 1, len(t) - 1
        while True:
            while i < n and t[i] == " ":
                i += 1
            if i == n:
                return True
            if t.startswith("**", i):
                i += 2
            else:
                j = i
                while j < n and (t[j].isalnum() or t[j] == "_"):
                    j += 1
                if j > i and j < n and t[j] == "=" and not t[i].isdigit():
                    i = j + 1
            i = mp_literal(t, i)
            if i < 0:
                return False
            while i < n and t[i] == " ":
                i += 1
            if i < n and t[i] == ",":
                i += 1
            elif i != n:
                return False

    def exact_text(x):
        # Only exact str and bytes: a subclass (or an object with __fspath__) may answer
        # this check one thing and fork_exec's own conversion another.
        t = type(x)
        if t is str:
            return x
        if t is bytes:
            return x.decode(fs_encoding, "surrogateescape")
        return None

    # -s: no user site (its .pth lines run before this file, from a HOME the experiment may
    # write); -P (3.11): no '' on sys.path, so that the entry point is the standard
    # library's and not a module of the working directory's.
    child_isolation = ["-s", "-P"] if sys.version_info >= (3, 11) else ["-s"]

    def mp_start(a, frame):
        """The arguments, rebuilt from checked copies, of a start that is multiprocessing's;
        None for any other."""
        if frame is None or len(a) < 6 or not start_exe or type(a) is not tuple:
            return None
        fn, name = code_names(frame)
        if name != "spawnv_passfds" or fn is None or \
                not fn.endswith("/multiprocessing/util.py") or kind(fn) != "s":
            return None
        args, exes, keep = a[0], a[1], a[3]
        if not is_one(type(args), (list, tuple)) or not is_one(type(exes), (list, tuple)) or \
                len(exes) != 1 or len(args) < 3 or len(args) > 64:
            return None
        if type(keep) is not tuple or any(type(x) is not int for x in keep):
            return None
        # close_fds, no cwd, and the rest descriptors, flags and Nones: no preexec_fn,
        # nothing callable or convertible.
        if a[2] is not True or a[4] is not None or \
                any(not is_one(type(x), (int, bool, type(None))) for x in a[6:]):
            return None
        args = [exact_text(x) for x in args]
        if None in args or exact_text(exes[0]) != start_exe or args[0] != start_exe:
            return None
        i, flags = 1, []
        while i < len(args) and args[i] != "-c":
            f = args[i]
            if not (f in start_flags or (len(f) > 1 and f[0] == "-" and
                                         all(c in "BdObqsvP" for c in f[1:]))):
                return None
            flags.append(f)
            i += 1
        rest = args[i + 2:]
        if i + 1 >= len(args) or rest not in ([], ["--multiprocessing-fork"]) or \
                not mp_program(args[i + 1]):
            return None
        argv = [start_exe] + child_isolation + flags + ["-c", args[i + 1]] + rest
        return (argv, [start_exe_b], True, keep, None, child_env()) + a[6:]

    try:
        import _posixsubprocess
        _orig = _posixsubprocess.fork_exec

        def fork_exec(a, k):
            frame = _getframe(3)  # fork_exec <- sealed <- the stand-in <- its caller
            if not k:
                allowed = mp_start(a, frame)
                if allowed is not None:
                    return allowed, {}
            refuse("_posixsubprocess.fork_exec", (a[0] if a else None,), frame,
                   "LB102", "subprocess")
            return a, k  # only recorded (permissive): called as it was
        _posixsubprocess.fork_exec = standin_for(fork_exec, _orig)
        installed_guards.add("_posixsubprocess")
    except ImportError:
        pass

    # _imp.create_builtin makes a new module object of a built-in module and raises no
    # event: a second _posixsubprocess with the original fork_exec. The import system
    # calls it through the module's attribute for every built-in import, with its own specs.
    _ModuleSpec = type(getattr(sys.modules.get("sys"), "__spec__", None))
    _imp_mod = sys.modules.get("_imp")
    # _imp reads the spec's name and origin by plain attribute lookup: a data descriptor put
    # on ModuleSpec, or a __getattribute__ of its own, would answer the loader otherwise than
    # the instance's __dict__ answers the gate. The class's dict is compared with what it
    # was (its keys are exact strs: type's setattr makes them so).
    spec_class_dict = dict(_ModuleSpec.__dict__) if _ModuleSpec is not type(None) else {}
    _spec_dict_get = spec_class_dict["__dict__"].__get__ if spec_class_dict else None

    def spec_class_intact():
        now = _type_dict(_ModuleSpec)
        return len(now) == len(spec_class_dict) and \
            all(now.get(k) is v for k, v in spec_class_dict.items())

    def spec_dict(a, k):
        """The __dict__ of the one spec passed, read past its class; None for anything
        else."""
        spec = a[0] if len(a) >= 1 and not k else None
        if type(spec) is not _ModuleSpec or not spec_class_intact():
            return None
        d = _spec_dict_get(spec)
        return d if type(d) is dict else None

    def fresh_spec(d):
        """A spec of the gate's making with d's exact-str entries: what _imp reads of it is
        what the gate judged (a key of the experiment's colliding with "origin" could change
        the origin while the loader looks it up)."""
        spec = object.__new__(_ModuleSpec)
        nd = _spec_dict_get(spec)
        for key, v in kept(list(_dict_items(d))):
            if type(key) is str:
                nd[key] = v
        return spec

    _create_builtin = getattr(_imp_mod, "create_builtin", None)
    if _create_builtin is not None and _spec_dict_get is not None:
        def create_builtin(a, k):
            d = spec_dict(a, k)
            name = sget(d, "name") if d is not None else None
            if type(name) is not str or name in installed_guards:
                refuse("_imp.create_builtin", (summary(name),), _getframe(3), "gate.tamper",
                       "access to the interpreter's insides",
                       "a second copy of a module the gate guards, or a spec that is not "
                       "the import system's")
                return a, k
            return (fresh_spec(d),), {}
        _imp_mod.create_builtin = standin_for(create_builtin, _create_builtin)

    # _imp.create_dynamic loads an extension module (the import system's ExtensionFileLoader
    # calls it through the module's attribute, with the spec it found) and raises no event:
    # a .so beside main.py, or one the experiment wrote, ran its native code on import.
    _create_dynamic = getattr(_imp_mod, "create_dynamic", None)
    if _create_dynamic is not None and _spec_dict_get is not None:
        def create_dynamic(a, k):
            d = spec_dict(a, k)
            where = sget(d, "origin") if d is not None else None
            f = _getframe(3)  # create_dynamic <- sealed <- the stand-in <- its caller
            if type(where) is not str:
                refuse("_imp.create_dynamic", (), f, "gate.tamper",
                       "access to the interpreter's insides",
                       "a spec that is not the import system's")
                return a, k
            name = sget(d, "name")
            # An extension's init is PyInit_ of the name's last part: under any package
            # name (x._posixsubprocess) the same file makes the same module.
            if type(name) is not str or name in installed_guards or \
                    name.rpartition(".")[2] in installed_guards:
                # where _posixsubprocess or _sqlite3 is an extension module (a build of
                # CPython's own, not Debian's), a second copy has the originals
                refuse("_imp.create_dynamic", (summary(name),), f, "gate.tamper",
                       "access to the interpreter's insides",
                       "a second copy of a module the gate guards")
                return a, k
            w = native_path_writable(where)
            if w is not None:
                refuse_native_writable("import", w, f)
                return a, k
            return (fresh_spec(d),) + a[1:], {}
        _imp_mod.create_dynamic = standin_for(create_dynamic, _create_dynamic)
        installed_guards.add("_imp")

    try:
        import _signal
        def inner_code(factory, name):
            for c in _func_code(factory).co_consts:
                if type(c) is _CodeType and c.co_name == name:
                    return c
            raise RuntimeError("labbox gate: no %s in its factory" % name)

        safe = frozenset(id(inner_code(f, n)) for f, n in (
            (w_signal_wrap, "labbox_signal_handler"), (w_excepthook, "excepthook"),
            (w_thread_excepthook, "thread_excepthook"), (w_strip, "strip"),
            (w_in_gate, "in_gate")))
        sig_in_gate = w_in_gate(id(globals()), id(world), id, safe, id(_func_code(hook)))
        _signal.signal, _signal.getsignal = w_signal_standins(
            _signal.signal, _signal.getsignal, w_signal_wrap, {}, callable, sig_in_gate,
            signals_pending, id, int)
        for f in (_signal.signal, _signal.getsignal):
            f.__name__ = f.__qualname__ = f.__code__.co_name
        installed_guards.add("_signal")  # a second _signal has the unwrapped signal()
    except (ImportError, AttributeError):
        pass

    # A refusal is raised inside the hook, so its traceback ends in a frame of this file:
    # uncaught, it is printed without it, so the experiment's traceback is its own. The
    # hooks are the world's (sys.excepthook is the experiment's to read).
    strip = w_strip(__file__)
    excepthook = w_excepthook(strip, sys.excepthook, Exception)
    sys.excepthook = excepthook
    gate_excepthook.append(excepthook)
    # threading takes its excepthook from _thread when it is imported: replacing it there
    # covers threads without importing threading (and functools, collections) at start-up.
    orig_thread_hook = getattr(_thread, "_excepthook", None)
    _args = getattr(_thread, "_ExceptHookArgs", None)
    if orig_thread_hook is None or _args is None:  # not CPython's _thread: as before
        import threading
        orig_thread_hook, _args = threading.excepthook, threading.ExceptHookArgs
    thread_excepthook = w_thread_excepthook(strip, orig_thread_hook, _args, Exception)

    printing[:] = [_func_code(excepthook), _func_code(thread_excepthook)]
    if hasattr(_thread, "_excepthook"):
        _thread._excepthook = thread_excepthook
    if "threading" in sys.modules:  # imported already (by a .pth file, or just above)
        sys.modules["threading"].excepthook = thread_excepthook

    sys.path[0:0] = [p for p in extra if p not in sys.path]

    # Where the main program was when its budget ended: labbox ends a run with SIGTERM (then
    # SIGKILL after the grace), and a program with no handler of its own dies without a
    # word. faulthandler's C handler prints every thread's stack to stderr (run.log), then
    # lets the signal end the process as before; a handler the experiment installs replaces
    # it, and signal.getsignal still says SIG_DFL. Only the run's main program (pid 2, init's
    # first child, in the sandbox's pid namespace; a process a shell left behind is
    # reparented to init too, but never has that pid): its forked children drop it, so that
    # their dumps (a DataLoader's workers) do not interleave with its one. It writes to a
    # copy of stderr at a high descriptor: code that closes fd 2 and opens results.json
    # gets fd 2 for the file, which the dump must not write into.
    try:
        import faulthandler
        import _signal as _sg
        if os.getpid() == 2 and os.getppid() == 1 and \
                _sg.getsignal(_sg.SIGTERM) == _sg.SIG_DFL:
            try:
                import fcntl
                err = fcntl.fcntl(2, fcntl.F_DUPFD_CLOEXEC, 900)
            except (ImportError, OSError):
                err = os.dup(2)
            faulthandler.register(_sg.SIGTERM, file=err, all_threads=True, chain=True)
            os.register_at_fork(after_in_child=w_unregister(faulthandler.unregister,
                                                             _sg.SIGTERM))
    except (ImportError, AttributeError, RuntimeError, ValueError, OSError):
        pass  # no stderr to print to, or no faulthandler: ended without a word, as before

    # Said last, once all of the above is in: labbox records the gate as installed only when
    # this line reaches it (a gate that broke half-way, or never ran, is not claimed).
    if fd >= 0:
        try:
            _write(fd, b'\n{"v": 1, "gate": "installed"}\n')
        except OSError:
            pass


# The gate runs with globals and builtins of its own, reachable from no module: the
# experiment replacing a builtin (`builtins.any = f`) or reading a stand-in's __globals__
# changes nothing the gate calls.
# Fails closed: site passes over a sitecustomize that raised ("Error in sitecustomize") and
# the interpreter would go on without the gate, so any failure to install ends it here.
try:
    import builtins as _builtins
    type(_labbox_gate)(_labbox_gate.__code__, {"__builtins__": dict(_builtins.__dict__),
                                               "__file__": __file__, "_GateNotIn": _GateNotIn,
                                               "__name__": "labbox_gate"}, "_labbox_gate")()
except BaseException as _e:
    import os as _os
    try:
        _os.write(2, ("labbox runtime gate: not installed (%s: %s); the interpreter stops "
                      "rather than run without it\n" % (type(_e).__name__, _e)).encode(
                          "utf-8", "replace"))
    finally:
        _os._exit(126)
del _labbox_gate, _builtins, _GateNotIn

# The interpreter's own sitecustomize, which this module shadows, runs as it would have.
import sys as _sys
_self = _sys.modules.pop("sitecustomize", None)
try:
    import sitecustomize as _real  # noqa: F401  (found after this directory left sys.path)
except ImportError as _e:
    if getattr(_e, "name", None) != "sitecustomize":
        raise
    # None of its own: site's import of this module ends by looking it up in sys.modules,
    # and prints "Error in sitecustomize" (KeyError) into the experiment's stderr without it.
    if _self is not None:
        _sys.modules["sitecustomize"] = _self
finally:
    del _sys, _self
