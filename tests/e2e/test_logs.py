"""Area 5: .ninja_log / .ninja_deps formats, recompaction, corruption recovery and interop with other ninja builds."""

import pytest

from common import RULES, manifest
from harness import deps_log_bytes, scenario

DEPS = (
    "rule cc\n"
    "  command = echo $out >> cmds.log && cat $in > $out && echo \"$out: $in $hdrs\" > $out.d\n"
    "  deps = gcc\n"
    "  depfile = $out.d\n"
)


def write_project(ws):
    for f, c in (("a.c", "a\n"), ("b.c", "b\n"), ("a.h", "h\n"), ("common.h", "c\n")):
        ws.write(f, c)
    ws.write("build.ninja", DEPS + RULES.split("rule cc")[0] +
             "build a.o: cc a.c\n  hdrs = a.h common.h\n"
             "build b.o: cc b.c\n  hdrs = common.h\n"
             "build app: cat a.o b.o\n"
             "build gen.txt: touch\n")


@scenario
def test_build_log_format_and_known_hashes(ws):
    ws.write("in", "x\n")
    ws.write("o3.rsp", "")
    ws.write("build.ninja",
             "rule r\n  command = cat in > out\n"
             "rule h\n  command = echo hi > o2\n"
             "rule rsp\n  command = cp o3.rsp o3\n  rspfile = o3.rsp\n  rspfile_content = a b\n"
             "build out: r in\nbuild o2: h\nbuild o3: rsp\n")
    ws.run("-j1")
    bl, dl = ws.logs()
    assert bl["header"] == "# ninja log v7"
    hashes = {p: h for p, h, _ in bl["entries"]}
    assert hashes == {"out": "f9084a3569068660", "o2": "4138059dded38ce6", "o3": "c62cc3ae244f316d"}
    assert dl is None and not ws.exists(".ninja_lock")


@scenario
def test_logs_not_created_by_dry_run_noop_or_failure(ws):
    ws.write("build.ninja", "rule fail\n  command = exit 1\nbuild f: fail\nbuild p: phony\n")
    ws.run("-j1", "-n", "f")
    ws.run("-j1", "p")
    ws.run("-j1", "f")
    assert not ws.exists(".ninja_log") and not ws.exists(".ninja_deps")
    ws.snapshot()


@scenario
def test_deps_log_records(ws):
    write_project(ws)
    ws.run("-j1")
    bl, dl = ws.logs()
    assert dl["records"][:4] == [("path", "a.o"), ("path", "a.c"), ("path", "a.h"), ("path", "common.h")]
    ws.touch("a.c")
    ws.run("-j1")  # deps unchanged: no new deps record is appended
    ws.logs()
    ws.write("build.ninja", ws.read("build.ninja").replace("hdrs = a.h common.h", "hdrs = common.h"))
    ws.touch("a.c")
    ws.run("-j1")
    ws.logs()


@scenario
def test_build_log_recompaction(ws):
    ws.write("build.ninja", RULES + "build out: touch\nbuild keep: touch\n")
    ws.run("-j1")
    lines = ws.read(".ninja_log").splitlines()
    entry = {ln.split("\t")[3]: ln for ln in lines[1:]}
    body = [entry["out"]] * 150 + [entry["keep"]] * 3
    body += ["1\t2\t1000\tdead-%d\t%s" % (i, "0123456789abcdef") for i in range(5)]
    ws.write(".ninja_log", "# ninja log v7\n" + "\n".join(body) + "\n")
    ws.remove("out")  # out is dirty, so the log is opened for writing (and recompacted first)
    ws.run("-j1")
    bl, _ = ws.logs()
    assert len(bl["entries"]) <= 3


@scenario
def test_build_log_no_recompaction_below_threshold(ws):
    ws.write("build.ninja", RULES + "build out: touch\n")
    ws.run("-j1")
    line = ws.read(".ninja_log").splitlines()[1]
    ws.write(".ninja_log", "# ninja log v7\n" + "\n".join([line] * 90) + "\n")
    ws.remove("out")
    ws.run("-j1")
    bl, _ = ws.logs()
    assert len(bl["entries"]) == 91


@scenario
def test_deps_log_recompaction(ws):
    write_project(ws)
    ws.run("-j1")
    mtime = ws.mtime("a.o")
    entries = [("a.o", mtime, ["a.c", "a.h", "common.h"])] * 1100
    entries += [("b.o", ws.mtime("b.o"), ["b.c", "common.h"]), ("gone.o", 1, ["gone.c"])]
    ws.write(".ninja_deps", deps_log_bytes(entries))
    r = ws.run("-j1")
    assert r.cmds == []
    ws.touch("b.c")
    ws.run("-j1")
    ws.logs()


CORRUPT_BUILD_LOGS = {
    "too_new_v8": "# ninja log v8\n",
    "no_header": "garbage\n",
    "empty_file": "",
    "garbage_line": None,
    "binary_junk": "\x00\x01\x02\xff\n",
}


@pytest.mark.parametrize("kind", sorted(CORRUPT_BUILD_LOGS))
def test_corrupt_build_log_recovery(differential, kind):
    def sc(ws):
        write_project(ws)
        ws.run("-j1")
        real = ws.read(".ninja_log")
        content = CORRUPT_BUILD_LOGS[kind]
        if kind == "garbage_line":
            lines = real.splitlines(True)
            content = "".join(lines[:2]) + "this is not a log line\n" + "".join(lines[2:])
        elif kind == "too_new_v8":
            content = content + "".join(real.splitlines(True)[1:])
        ws.write(".ninja_log", content)
        ws.run("-j1")
        ws.run("-j1")
        ws.logs(strict=False)
    differential(sc)


@pytest.mark.parametrize("kind", ["bad_signature", "bad_version", "truncated_tail", "garbage_tail",
                                  "header_only", "short_header"])
def test_corrupt_deps_log_recovery(differential, kind):
    def sc(ws):
        write_project(ws)
        ws.run("-j1")
        data = bytearray(ws.path(".ninja_deps").read_bytes())
        if kind == "bad_signature":
            data[0:2] = b"XX"
        elif kind == "bad_version":
            data[12:16] = b"\x03\x00\x00\x00"
        elif kind == "truncated_tail":
            data = data[:-6]
        elif kind == "bad_checksum":
            data[16 + 4 + 4] ^= 0xFF  # checksum of the first path record ("a.o\0" + checksum)
        elif kind == "garbage_tail":
            data += b"\x07\x00\x00\x00abc"
        elif kind == "header_only":
            data = data[:16]
        elif kind == "short_header":
            data = data[:10]
        ws.write(".ninja_deps", bytes(data))
        ws.run("-j1")
        ws.run("-j1")
        ws.touch("a.h")
        ws.run("-j1")
        ws.logs(strict=False)
    differential(sc)


@scenario
def test_builddir_logs_and_lock(ws):
    ws.write("build.ninja", "builddir = state\n" + DEPS + "build x.o: cc x.c\n")
    ws.write("x.c", "x\n")
    ws.run("-j1")
    assert ws.exists("state/.ninja_log") and ws.exists("state/.ninja_deps") and not ws.exists("state/.ninja_lock")
    ws.logs("state")
    ws.snapshot()


# ---------------------------------------------------------------------------------------------------------------------
# Interop: the same build directory used alternately by reference ninja and headroom


@scenario
def test_interop_ref_then_sut(ws):
    write_project(ws)
    ws.run("-j1", tool="ref")
    r = ws.run("-j1")
    assert r.stdout == "ninja: no work to do.\n"
    ws.touch("common.h")
    r = ws.run("-j1")
    assert r.cmds == ["a.o", "b.o", "app"]
    r = ws.run("-j1", tool="ref")
    assert r.stdout == "ninja: no work to do.\n"
    ws.touch("a.h")
    ws.run("-j1", tool="ref")
    ws.run("-j1")
    ws.logs()


@scenario
def test_interop_sut_then_ref(ws):
    write_project(ws)
    ws.run("-j1")
    r = ws.run("-j1", tool="ref")
    assert r.stdout == "ninja: no work to do.\n"
    ws.touch("b.c")
    r = ws.run("-j1", tool="ref")
    assert r.cmds == ["b.o", "app"]
    ws.run("-j1")
    ws.touch("a.h")
    r = ws.run("-j1")
    assert r.cmds == ["a.o", "app"]
    r = ws.run("-j1", tool="ref")
    assert r.cmds == []
    ws.logs()


@scenario
def test_interop_alternating_restat_and_generator(ws):
    ws.write("src", "x\n")
    ws.write("build.ninja",
             "rule cp_if\n"
             "  command = echo $out >> cmds.log && (cmp -s $in $out || cp $in $out)\n"
             "  restat = 1\n"
             "rule gen\n"
             "  command = echo $out >> cmds.log && cp $in $out\n"
             "  generator = 1\n"
             + RULES +
             "build mid: cp_if src\n"
             "build top: cat mid\n"
             "build g: gen src\n")
    ws.run("-j1")
    ws.touch("src")
    ws.run("-j1", tool="ref")
    ws.run("-j1")
    ws.run("-j1", tool="ref")
    ws.touch("src")
    ws.run("-j1")
    ws.run("-j1", tool="ref")
    ws.logs()


@scenario
def test_interop_old_ninja_after_new(ws):
    """ninja 1.11 reads a v7 log as v5 (hash mismatch: rebuild) and appends v5 lines; the new tool copes."""
    ws.require_v111()
    write_project(ws)
    ws.run("-j1")
    ws.run("-j1", tool="v111", stderr="ignore")
    ws.run("-j1")
    ws.run("-j1")
    ws.logs()


@scenario
def test_tool_restat_and_recompact(ws):
    write_project(ws)
    ws.run("-j1")
    ws.touch("app")  # the output changed behind ninja's back; -t restat records the new mtime
    ws.run("-t", "restat", "app")
    ws.run("-j1")
    ws.run("-t", "restat")
    ws.run("-t", "recompact")
    ws.run("-j1")
    ws.logs()
    ws.remove(".ninja_log")
    ws.run("-t", "restat")
    assert not ws.exists(".ninja_log")
