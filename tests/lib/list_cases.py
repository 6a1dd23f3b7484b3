#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The cases of many test scripts in one Python process, for tests/CMakeLists.txt:

    list_cases.py SCRIPT.py...

prints `SCRIPT NAME LABELS TIMEOUT` per case: each script's own `--list` (harness.main_cases),
run in this process. Why: configure ran one interpreter per script (about 45), each
importing the harness and building its cases again, which took minutes on a busy 2-core
machine; one process imports the shared modules once. A script that fails to list is said
on stderr and the exit status is 1; the others are still listed."""
import contextlib
import io
import os
import runpy
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree


def main(paths):
    rc = 0
    for path in paths:
        name = os.path.splitext(os.path.basename(path))[0]
        out = io.StringIO()
        argv, sys.argv = sys.argv, [path, "--list"]
        try:
            with contextlib.redirect_stdout(out):
                runpy.run_path(path, run_name="__main__")
            status = 0
        except SystemExit as e:
            status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except Exception as e:  # the script's own error, named; the others still listed
            status = "%s: %s" % (type(e).__name__, e)
        finally:
            sys.argv = argv
        if status != 0:
            print("list_cases.py: %s --list failed: %s" % (name, status), file=sys.stderr)
            rc = 1
            continue
        for line in out.getvalue().splitlines():
            if line.strip():
                print("%s %s" % (name, line))
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
