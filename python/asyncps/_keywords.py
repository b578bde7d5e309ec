"""One-line TypeErrors for calls the binding cannot match.

pybind11 answers a misspelt keyword (Session(layout, stall_timout=5)) or an argument of the wrong
type with a multi-line "incompatible constructor arguments" dump of every overload. Every
public class's methods and every public function of the module are wrapped here so that such a
call raises one line instead: the unknown keyword and the nearest valid one, or the call's
valid signature.
"""
import difflib
import functools
import re

_SIG = re.compile(r"^\s*(?:\d+\.\s*)?(\w+)\((.*)\)(?:\s*->.*)?$")
_PARAM = re.compile(r"(?:^|,\s*)(\*?\w+)(?::|\s*=|$|,)")


def _signatures(fn):
    """[(name, [parameter names], one-line text)] of the overloads in fn's pybind11 docstring."""
    out = []
    for line in (getattr(fn, "__doc__", None) or "").splitlines():
        m = _SIG.match(line)
        if not m:
            continue
        params, depth, cur = [], 0, ""
        for ch in m.group(2) + ",":  # split on top-level commas (defaults may hold brackets)
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
            if ch == "," and depth == 0:
                params.append(cur.strip())
                cur = ""
            else:
                cur += ch
        names = [p.split(":")[0].split("=")[0].strip() for p in params if p]
        names = [n for n in names if n and n not in ("self", "*", "/")]
        text = ", ".join(p.split(":")[0].strip() + ("=" + p.split("=", 1)[1].strip() if "=" in p else "")
                         for p in params if p and not p.startswith("self"))
        out.append((m.group(1), names, text))
    return out


def _one_line(where, fn, error, kwargs):
    sigs = _signatures(fn)
    if not sigs:
        return None
    known = {n for _, names, _ in sigs for n in names}
    for k in kwargs:
        if k not in known:
            near = difflib.get_close_matches(k, sorted(known), n=1)
            hint = f" (did you mean '{near[0]}'?)" if near else f" (it takes {', '.join(sorted(known))})"
            return f"{where}: unknown keyword argument '{k}'{hint}"
    first = str(error).splitlines()[0].rstrip(": ")
    return f"{where}: {first}; it takes ({'; or '.join(t for _, _, t in sigs)})"


def _wrap(fn, where):
    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except TypeError as e:
            if "incompatible" not in str(e) or "\n" not in str(e):
                raise
            line = _one_line(where, fn, e, kwargs)
            if line is None:
                raise
            raise TypeError(line) from None
    return call


def one_line_type_errors(namespace, names):
    """Wraps the public classes' methods and the public functions among namespace[names]."""
    for name in names:
        obj = namespace.get(name)
        if isinstance(obj, type):
            for attr, fn in list(vars(obj).items()):
                if callable(fn) and (not attr.startswith("_") or attr == "__init__") and "incompatible" not in attr:
                    if type(fn).__name__ in ("instancemethod", "builtin_function_or_method"):
                        label = name if attr == "__init__" else f"{name}.{attr}"
                        try:
                            setattr(obj, attr, _wrap(fn, label))
                        except (AttributeError, TypeError):
                            pass
        elif callable(obj) and type(obj).__name__ == "builtin_function_or_method":
            namespace[name] = _wrap(obj, name)
