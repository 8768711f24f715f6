"""`deps = msvc` against ninja 1.13.2: /showIncludes lines become .ninja_deps records (canonical, sorted, no
duplicates, toolchain headers left out) and leave the console, and so does the line in which cl.exe / clang-cl
echo the name of the source file they compile (a line ending in .c/.cc/.cxx/.cpp/.c++ before the first include).
A shell script plays the compiler: it prints what cl.exe would and writes the object."""

from harness import scenario

# fakecl.sh OUT PRINTF-FORMAT [EXIT]: logs OUT, prints the format with printf, writes OUT, exits EXIT.
FAKE_CL = 'echo "$1" >> cmds.log\nprintf "$2"\necho obj > "$1"\nexit "${3:-0}"\n'


def msvc_rule(prefix=None):
    rule = "rule cl\n  command = sh fakecl.sh $out '$say' $status\n  deps = msvc\n"
    if prefix is not None:
        rule += f"  msvc_deps_prefix = {prefix}\n"
    return rule


def write_headers(ws, *names):
    ws.write("fakecl.sh", FAKE_CL)
    for name in names:
        ws.write(name, name + "\n")


@scenario
def test_msvc_source_echo_and_includes_leave_the_output(ws):
    write_headers(ws, "a.c", "b.cpp", "a.h", "z.h", "sub/n.h")
    say_a = (r"a.c\r\n"
             r"Note: including file: z.h\r\n"
             r"Note: including file:  sub/../a.h\r\n"       # nested include: extra indent, not canonical
             r"Note: including file:   ./sub/n.h\r\n"
             r"Note: including file: z.h\r\n"               # seen twice: recorded once
             r"Note: including file: C:\\Program Files\\sdk\\w.h\r\n"  # toolchain header: not a dependency
             r"a.c(3): warning C4101: unreferenced local variable\r\n")
    say_b = r"B.CPP\nNote: including file: a.h\nx.cpp\n"      # after the first include a .cpp line is output
    ws.write("build.ninja", msvc_rule() +
             f"build a.obj: cl a.c\n  say = {say_a}\n"
             f"build b.obj: cl b.cpp\n  say = {say_b}\n")
    ws.run("-j1")
    ws.logs()
    ws.run("-j1", "-t", "deps")
    ws.touch("sub/n.h")                                      # a recorded include: a.obj rebuilds
    ws.run("-j1")
    ws.run("-j1")


@scenario
def test_msvc_echo_is_dropped_only_before_the_first_include(ws):
    write_headers(ws, "m.cc", "h.h")
    say = (r"m.cc\n"                   # the echo
           r"warning: something\n"     # output before any include is kept ...
           r"also.CXX\n"               # ... but a source-looking line there is still dropped
           r"\n"                       # empty lines are kept
           r"lib.c++\rNote: including file: h.h\r"  # a lone CR ends a line too
           r"Note: including file:\n"      # the prefix alone names nothing: output
           r"Note: including file:   \n"   # nor does the prefix and spaces
           r"Note: including file:h.h\n"   # the default prefix ends in a space
           r"late.c\n"
           r"no newline at the end.cc")
    ws.write("build.ninja", msvc_rule() + f"build m.obj: cl m.cc\n  say = {say}\n")
    ws.run("-j1")
    ws.logs()


@scenario
def test_msvc_custom_prefix_and_a_failing_compile(ws):
    write_headers(ws, "f.cxx", "g.h")
    say = (r"f.cxx\r\n"
           r"Remarque : inclusion du fichier :  g.h\r\n"
           r"Note: including file: g.h\r\n"      # not the prefix in use: output
           r"f.cxx(1): error C2065: undeclared identifier\r\n")
    ws.write("build.ninja", msvc_rule("Remarque : inclusion du fichier : ") +
             f"build f.obj: cl f.cxx\n  say = {say}\n  status = 2\n"
             f"build ok.obj: cl f.cxx\n  say = {say}\n")
    ws.run("-j1", "-k", "0")                    # the failed edge's output is filtered too
    ws.logs()
