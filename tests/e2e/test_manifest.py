"""Area 1: the build.ninja language (statements, scoping, escapes, edges, pools, dyndep, parse errors)."""

import pytest

from common import RULES, manifest
from harness import scenario


@scenario
def test_defaults_are_cumulative_and_select_targets(ws):
    ws.write("in.txt", "hello\n")
    ws.write("build.ninja", manifest(
        "build a: cat in.txt\n"
        "build b: cat a\n"
        "build c: cat in.txt\n"
        "default a\n"
        "default c\n"
    ))
    r = ws.run("-j1")
    assert r.cmds == ["a", "c"]
    ws.run("-j1", "b")
    ws.run("-j1")
    ws.snapshot()
    ws.logs()


@scenario
def test_no_default_builds_all_roots(ws):
    ws.write("in.txt", "x\n")
    ws.write("build.ninja", manifest(
        "build mid: cat in.txt\n"
        "build top1: cat mid\n"
        "build top2: cat mid\n"
        "build lone: touch\n"
    ))
    r = ws.run("-j1")
    assert sorted(r.cmds) == ["lone", "mid", "top1", "top2"]
    ws.snapshot()


@scenario
def test_default_with_variable_and_multiple_targets(ws):
    ws.write("build.ninja", manifest(
        "d = x\n"
        "build x1: touch\n"
        "build x2: touch\n"
        "build y: touch\n"
        "default ${d}1 $d2\n"
    ))
    ws.run("-j1")


@scenario
def test_variable_lookup_order(ws):
    """edge binding > rule binding > file scope; rule bindings are lazy and see $in/$out and edge bindings."""
    ws.write("build.ninja",
             "flags = file\n"
             "extra = fileextra\n"
             "rule show\n"
             "  command = echo $out >> cmds.log && echo \"flags=$flags extra=$extra desc=$description\" > $out\n"
             "  description = D[$flags/$out/$in]\n"
             "build o1: show\n"
             "build o2: show\n"
             "  flags = edge\n"
             "build o3: show\n"
             "  extra = edge3\n"
             "  description = E3\n"
             "flags = file2\n"
             "build o4: show o1\n")
    ws.run("-j1")
    ws.snapshot()
    assert ws.read("o2") == "flags=edge extra=fileextra desc=D[edge/o2/]\n"


@scenario
def test_edge_bindings_evaluated_at_parse_in_file_scope(ws):
    ws.write("build.ninja",
             "a = file\n"
             "rule show\n"
             "  command = echo $out >> cmds.log && echo \"$b\" > $out\n"
             "build o: show\n"
             "  a = edge\n"
             "  b = [$a] [$out]\n"
             "a = later\n")
    ws.run("-j1")
    ws.snapshot()
    assert ws.read("o") == "[file] []\n"


@scenario
def test_binding_less_edge_quirk_1516(ws):
    """An edge without bindings consults the file scope before the rule's bindings (ninja issue #1516)."""
    ws.write("build.ninja",
             "rule r\n"
             "  command = echo $out >> cmds.log && touch $out\n"
             "  description = RULE $out\n"
             "description = FILE-$out\n"
             "build plain: r\n"
             "build bound: r\n"
             "  unrelated = 1\n")
    r = ws.run("-j1")
    assert r.stdout == "[1/2] FILE-\n[2/2] RULE bound\n"


@scenario
def test_include_shares_scope_and_is_relative_to_cwd(ws):
    ws.write("in.txt", "i\n")
    ws.write("sub/rules.ninja", RULES + "v = from-include\n")
    ws.write("sub/more.ninja", "build b: cat in.txt\n")
    ws.write("build.ninja",
             "include sub/rules.ninja\n"
             "rule show\n"
             "  command = echo $out >> cmds.log && echo $v > $out\n"
             "build a: show\n"
             "include sub/more.ninja\n")
    ws.run("-j1")
    ws.snapshot()


@scenario
def test_subninja_child_scope(ws):
    ws.write("build.ninja",
             "v = parent\n"
             "builddir = bd\n"
             "rule show\n"
             "  command = echo $out >> cmds.log && echo parent-rule $v $builddir > $out\n"
             "subninja child.ninja\n"
             "build p: show\n"
             "build p2: show\n"
             "  w = $w\n")
    ws.write("child.ninja",
             "v = child\n"
             "w = childw\n"
             "rule show\n"
             "  command = echo $out >> cmds.log && echo child-rule $v $builddir > $out\n"
             "build c: show\n")
    ws.run("-j1")
    ws.snapshot()
    assert ws.read("c") == "child-rule child bd\n"
    assert ws.read("p") == "parent-rule parent bd\n"
    ws.logs("bd")


@scenario
def test_subninja_rules_inherited_and_duplicate_rule_in_siblings(ws):
    ws.write("build.ninja", RULES + "subninja a.ninja\nsubninja b.ninja\n")
    ws.write("a.ninja", "rule x\n  command = echo $out >> cmds.log && echo A > $out\nbuild a: x\nbuild a2: touch\n")
    ws.write("b.ninja", "rule x\n  command = echo $out >> cmds.log && echo B > $out\nbuild b: x\n")
    ws.run("-j1")
    ws.snapshot()


@scenario
def test_dollar_escapes_and_continuations(ws):
    ws.write("build.ninja",
             "rule show\n"
             "  command = echo $out >> cmds.log && printf '%s|' $v > $out$\n"
             "      && echo done >> $out\n"
             "v = a$$b c$ d${x}e $x.f\n"
             "x = X\n"
             "w = one $\n"
             "    two$\n"
             "    three\n"
             "build o1: show\n"
             "build o2: show\n"
             "  v = $w\n"
             "build o$:3: show\n"
             "build sp$ ace $\n"
             "    tail: show\n")
    ws.run("-j1")
    ws.snapshot()
    assert ws.exists("sp ace") and ws.exists("o:3")


@scenario
def test_shell_quoting_of_in_and_out(ws):
    ws.write("we ird's.txt", "q\n")
    ws.write("build.ninja", manifest(
        "build out$ 1: cat we$ ird's.txt\n"
        "build plain+-_./x: cat out$ 1\n"
        "rule show\n"
        "  command = echo $out >> cmds.log && echo $in > $out\n"
        "build shown: show out$ 1 we$ ird's.txt\n"))
    ws.run("-j1", "-v")
    ws.snapshot()


@scenario
def test_in_newline_and_rspfile_content(ws):
    ws.write("a.txt", "A\n")
    ws.write("b.txt", "B\n")
    ws.write("build.ninja",
             "rule link\n"
             "  command = echo $out >> cmds.log && cp $out.rsp $out.copy && cat @$out.rsp > /dev/null; cat $out.rsp > $out\n"
             "  rspfile = $out.rsp\n"
             "  rspfile_content = $in_newline\n"
             "build out: link a.txt b.txt | imp\n"
             "build imp: phony\n")
    ws.run("-j1")
    ws.snapshot()
    assert ws.read("out") == "a.txt\nb.txt"
    assert not ws.exists("out.rsp")


@scenario
def test_implicit_and_order_only_inputs(ws):
    ws.write("src", "s\n")
    ws.write("hdr", "h\n")
    ws.write("build.ninja", manifest(
        "build oo: touch\n"
        "build out: cat src | hdr || oo\n"))
    r = ws.run("-j1")
    assert r.cmds == ["oo", "out"]
    assert ws.read("out") == "s\n"  # $in excludes implicit and order-only inputs
    ws.run("-j1")
    ws.touch("hdr")
    r = ws.run("-j1")
    assert r.cmds == ["out"]
    ws.touch("oo")
    r = ws.run("-j1")
    assert r.cmds == []
    ws.logs()


@scenario
def test_implicit_outputs(ws):
    ws.write("src", "s\n")
    ws.write("build.ninja",
             "rule two\n"
             "  command = echo $out >> cmds.log && cat $in > $out && echo side > side.txt\n"
             "build main | side.txt: two src\n"
             "build user: two side.txt\n"
             "build only | imp.only: two src\n")
    ws.run("-j1", "user")
    ws.run("-j1", "user")
    ws.remove("side.txt")
    r = ws.run("-j1", "user")
    assert r.cmds == ["main", "user"]
    ws.run("-j1", "imp.only")
    ws.snapshot()
    ws.logs()


@scenario
def test_no_explicit_output_and_empty_implicit_list(ws):
    ws.write("build.ninja",
             "rule r\n"
             "  command = echo made >> cmds.log && touch hidden && touch foo\n"
             "build | hidden: r\n"
             "build foo | : r\n"
             "  description = FOO\n")
    ws.run("-j1", "hidden")
    ws.run("-j1", "foo")
    ws.snapshot()


@scenario
def test_validations(ws):
    ws.write("src", "s\n")
    ws.write("build.ninja", manifest(
        "build check: cat src\n"
        "build out: cat src |@ check\n"
        "build other: cat out\n"))
    r = ws.run("-j1", "other")
    assert sorted(r.cmds) == ["check", "other", "out"]
    ws.touch("src")
    ws.run("-j1", "out")
    ws.snapshot()


@scenario
def test_phony_aliases_are_not_run_logged_or_counted(ws):
    ws.write("src", "s\n")
    ws.write("build.ninja", manifest(
        "build a: cat src\n"
        "build b: cat src\n"
        "build all: phony a b\n"
        "build empty: phony\n"
        "build stamp: cat empty\n"))
    r = ws.run("-j1", "all")
    assert r.stdout == "[1/2] CAT a\n[2/2] CAT b\n"
    ws.run("-j1", "all")
    ws.run("-j1", "stamp")
    ws.run("-j1", "stamp")  # phony without inputs and missing output is always dirty
    ws.logs()


@scenario
def test_pool_depth_limits_parallelism(ws):
    """Jobs in a depth-1 pool never overlap even with -j8 (checked with an mkdir lock)."""
    ws.script("job.sh",
              'mkdir lock.d 2>/dev/null || echo OVERLAP >> overlap.txt\n'
              'echo "$1" >> cmds.log\n'
              'i=0; while [ $i -lt 200 ]; do i=$((i+1)); done\n'
              'rmdir lock.d\n'
              'touch "$1"\n')
    ws.write("build.ninja",
             "pool one\n"
             "  depth = 1\n"
             "rule r\n"
             "  command = ./job.sh $out\n"
             "  pool = one\n"
             + "".join("build o%d: r\n" % i for i in range(6)))
    ws.run("-j8", stdout="ignore")
    assert not ws.exists("overlap.txt")
    ws.snapshot()


@scenario
def test_pool_depth_two_allows_two_concurrent_jobs(ws):
    """Two jobs that wait for each other (barrier) complete only if the pool lets them run together."""
    ws.script("barrier.sh",
              'touch "$1.started"\n'
              'n=0\n'
              'while [ ! -e a.started ] || [ ! -e b.started ]; do\n'
              '  n=$((n+1)); [ $n -gt 20000 ] && { echo timeout; exit 9; }\n'
              '  sleep 0.001\n'
              'done\n'
              'echo "$1" >> cmds.log\n'
              'touch "$1"\n')
    ws.write("build.ninja",
             "pool two\n"
             "  depth = 2\n"
             "rule r\n"
             "  command = ./barrier.sh $out\n"
             "  pool = two\n"
             "build a: r\n"
             "build b: r\n")
    r = ws.run("-j4", stdout="ignore")
    assert r.rc == 0


@scenario
def test_pool_depths_ninja_reads_leniently(ws):
    """Depths ninja accepts though they look wrong: the low 32 bits of 2^32 (0, unlimited) and of 2^32 + 2,
    a trailing junk suffix, and a non-number (0). Each pool runs its jobs to the end."""
    depths = {"wrap0": "4294967296", "wrap2": "4294967298", "suffix": "12x", "word": "abc",
              "negwrap": "-4294967296", "max": "2147483647"}
    text = "".join("pool %s\n  depth = %s\n" % (name, d) for name, d in depths.items())
    text += "rule r\n  command = echo $out >> cmds.log && touch $out\n"
    for name in depths:
        text += "build %s_1: r\n  pool = %s\nbuild %s_2: r\n  pool = %s\n" % (name, name, name, name)
    ws.write("build.ninja", text)
    r = ws.run("-j4", stdout="ignore")
    assert r.rc == 0, r
    ws.snapshot()


@scenario
def test_console_pool(ws):
    ws.write("build.ninja",
             "rule con\n"
             "  command = echo $out >> cmds.log && echo console-output-$out && touch $out\n"
             "  pool = console\n"
             "  description = CON $out\n"
             "rule r\n"
             "  command = echo $out >> cmds.log && echo buffered-$out && touch $out\n"
             "  description = R $out\n"
             "build c1: con\n"
             "build r1: r c1\n"
             "build c2: con r1\n")
    r = ws.run("-j1")
    assert "console-output-c1" in r.stdout
    ws.run("-j1")


@scenario
def test_builddir_holds_logs(ws):
    ws.write("build.ninja", RULES + "builddir = out/state\nbuild x: touch\n")
    ws.run("-j1")
    assert ws.exists("out/state/.ninja_log")
    assert not ws.exists(".ninja_log")
    ws.run("-j1")
    ws.logs("out/state")
    ws.snapshot()


@pytest.mark.parametrize("version", ["1.13", "1.13.2", "1.13.99", "1.3", "0.9", "1.14", "2.0", "1.13.3.git"])
def test_ninja_required_version(differential, version):
    def sc(ws):
        ws.write("build.ninja", "ninja_required_version = %s\n%sbuild x: touch\n" % (version, RULES))
        ws.run("-j1")
    differential(sc)


@scenario
def test_required_version_checked_when_parsed(ws):
    """The version check fires at the statement: an earlier syntax error wins, a later one is never reached."""
    ws.write("build.ninja", "ninja_required_version = 9.0\nbuild x: nope\n")
    ws.run("-j1")
    ws.write("build.ninja", "build x: nope\nninja_required_version = 9.0\n")
    ws.run("-j1")


@scenario
def test_path_canonicalisation(ws):
    ws.write("dir/src", "s\n")
    ws.write("build.ninja", manifest(
        "build ./out//x: cat dir/../dir/./src\n"
        "build user: cat out/x\n"))
    ws.run("-j1", "user", "./out/./x")
    ws.snapshot()
    ws.logs()


@scenario
def test_crlf_manifest_and_comments(ws):
    ws.write("build.ninja", (
        "# top comment\r\n"
        "rule r\r\n"
        "  # indented comment\r\n"
        "  command = echo $out >> cmds.log && echo '$v' > $out\r\n"
        "\r\n"
        "v = not # a comment\r\n"
        "   # comment after spaces\r\n"
        "build o: r\r\n"
        "  v = edge # still value\r\n"
    ).encode())
    ws.run("-j1")
    ws.snapshot()


@scenario
def test_keywords_as_names_and_identifiers(ws):
    ws.write("build.ninja",
             "rule build\n"
             "  command = echo $out >> cmds.log && touch $out\n"
             "buildx = 1\n"
             "build subninja: build\n"
             "build include default: build\n"
             "build pool: build\n"
             "default subninja\n")
    ws.run("-j1")
    ws.run("-j1", "include", "default", "pool")


@scenario
def test_rule_bool_attributes_are_non_empty_strings(ws):
    """restat = 0 is TRUE: an unchanged output cleans its dependents."""
    ws.write("src", "s\n")
    ws.write("build.ninja",
             "rule maybe\n"
             "  command = echo $out >> cmds.log && (test -e $out || touch $out)\n"
             "  restat = 0\n"
             + RULES +
             "build mid: maybe src\n"
             "build top: cat mid\n")
    ws.run("-j1")
    ws.touch("src")
    r = ws.run("-j1")
    assert r.cmds == ["mid"]
    ws.logs()


@scenario
def test_rule_variable_cycle_is_fatal(ws):
    ws.write("build.ninja", "rule r\n  command = $a\n  a = $b\n  b = $a\nbuild x: r\n")
    ws.run("-j1")


@scenario
def test_utf8_and_tab_in_paths(ws):
    ws.write("build.ninja", manifest(
        "build q\tz: touch\n"
        "build \u00fcnicode\u2603: touch\n"
        "  description = S\u00fc\u00df $out\n"))
    ws.run("-j1")
    ws.snapshot()


@scenario
def test_phony_self_reference_is_dropped_with_warning(ws):
    ws.write("build.ninja", manifest("build a: phony a\nbuild b: touch a\n"))
    ws.run("-j1", "b")
    ws.run("-j1", "-w", "phonycycle=err", "b")
    ws.run("-j1", "-w", "phonycycle=warn", "b")


@scenario
def test_dyndep_basic(ws):
    """A dyndep file already present is loaded before the scan and adds implicit inputs/outputs."""
    ws.write("extra.in", "e\n")
    ws.write("in", "i\n")
    ws.write("out.dd", "ninja_dyndep_version = 1\nbuild out | out.imp: dyndep | extra.in\n")
    ws.write("build.ninja",
             "rule r\n"
             "  command = echo $out >> cmds.log && cat $in > $out && touch out.imp\n"
             "build out: r in || out.dd\n"
             "  dyndep = out.dd\n"
             "build user: r out out.imp\n")
    r = ws.run("-j1", "user")
    assert r.cmds == ["out", "user"]
    ws.run("-j1", "user")
    ws.touch("extra.in")
    r = ws.run("-j1", "user")
    assert r.cmds == ["out", "user"]
    ws.snapshot()
    ws.logs()


@scenario
def test_dyndep_generated_mid_build(ws):
    """The dyndep file is itself built; ninja loads it right after and the new input delays the edge."""
    ws.write("in", "i\n")
    ws.write("build.ninja",
             "rule gen\n"
             "  command = echo $out >> cmds.log && printf 'ninja_dyndep_version = 1.0\\nbuild out: dyndep | late\\n  restat = 1\\n' > $out\n"
             "rule r\n"
             "  command = echo $out >> cmds.log && cat $in > $out\n"
             "rule touch\n"
             "  command = echo $out >> cmds.log && touch $out\n"
             "build late: touch\n"
             "build out.dd: gen\n"
             "build out: r in || out.dd\n"
             "  dyndep = out.dd\n")
    r = ws.run("-j1", "out")
    assert r.cmds.index("late") < r.cmds.index("out")
    ws.run("-j1", "out")
    ws.touch("late")
    ws.run("-j1", "out")
    ws.logs()


@scenario
def test_dyndep_errors(ws):
    ws.write("in", "i\n")
    base = ("rule r\n  command = echo $out >> cmds.log && cat $in > $out\n"
            "build out: r in || out.dd\n  dyndep = out.dd\n")
    ws.write("build.ninja", base)
    ws.write("out.dd", "ninja_dyndep_version = 2\n")
    ws.run("-j1")
    ws.write("out.dd", "ninja_dyndep_version = 1\nbuild other: dyndep\n")
    ws.run("-j1")
    ws.write("out.dd", "ninja_dyndep_version = 1\n")
    ws.run("-j1")
    ws.write("build.ninja", "rule r\n  command = true\nbuild out: r in\n  dyndep = notaninput\n")
    ws.run("-j1")


@scenario
def test_unknown_target_and_spellcheck(ws):
    ws.write("build.ninja", manifest("build hello: touch\nbuild world: touch\n"))
    ws.run("-j1", "helo")
    ws.run("-j1", "zzzzzzzz")
    ws.run("-j1", "hello", "nothere")


@scenario
def test_duplicate_outputs(ws):
    ws.write("build.ninja", manifest("build a: touch\nbuild a: touch\n"))
    ws.run("-j1")
    ws.write("build.ninja", manifest("build a a: touch\n"))
    ws.run("-j1")
    ws.write("build.ninja", manifest("build a | a: touch\n"))
    ws.run("-j1")
    ws.write("build.ninja", RULES + "subninja sub.ninja\n")
    ws.write("sub.ninja", "build a: touch\nbuild a: touch\n")
    ws.run("-j1")


@scenario
def test_missing_manifest_and_missing_include(ws):
    ws.run("-j1")
    ws.run("-j1", "-f", "other.ninja")
    ws.write("build.ninja", "rule r\n  command = true\ninclude nothere.ninja\n")
    ws.run("-j1")
    ws.write("build.ninja", "subninja nothere.ninja\n")
    ws.run("-j1")
    ws.write("build.ninja", "include ok.ninja\n")
    ws.write("ok.ninja", "rule r\n  command = true\nbuild x: r\nbuild y: nope\n")
    ws.run("-j1")


PARSE_ERRORS = {
    "tab_indent": "rule r\n  command = touch $out\nbuild a: r\n\tfoo = 1\n",
    "bad_dollar": "x = a$!b\n",
    "dollar_at_eof": "x = $",
    "unexpected_eof_no_newline": "rule r\n  command = touch $out\nbuild a: r",
    "comment_at_eof": "rule r\n  command = x\n# trailing comment",
    "bare_cr": "x = 1\rbuild\n",
    "unknown_rule": "build a: nope\n",
    "missing_rule_name": "build a:\n",
    "expected_colon": "rule r\n  command = x\nbuild a r\n",
    "dollar_colon": "rule r\n  command = x\nbuild $: r x\n",
    "no_command": "rule r\n  description = d\nbuild a: r\n",
    "unexpected_variable_in_rule": "rule r\n  command = x\n  foo = bar\n",
    "duplicate_rule": "rule r\n  command = x\nrule r\n  command = y\n",
    "rspfile_without_content": "rule r\n  command = x\n  rspfile = a\n",
    "rspfile_content_without_rspfile": "rule r\n  command = x\n  rspfile_content = a\n",
    "unexpected_indent": "x = 1\n  y = 2\n",
    "indent_after_blank_line": "rule r\n  command = x\n  \n  description = y\n",
    "pool_without_depth": "pool p\n",
    "pool_negative_depth": "pool p\n  depth = -1\n",
    # ninja keeps a depth's low 32 bits in an int: these read as negative and are refused.
    "pool_depth_2_pow_31": "pool p\n  depth = 2147483648\n",
    "pool_depth_2_pow_32_minus_1": "pool p\n  depth = 4294967295\n",
    "pool_depth_beyond_long": "pool p\n  depth = 99999999999999999999\n",
    "pool_unexpected_var": "pool p\n  depth = 1\n  foo = 2\n",
    "duplicate_pool": "pool p\n  depth = 1\npool p\n  depth = 2\n",
    "unknown_pool": "rule r\n  command = x\n  pool = nope\nbuild a: r\n",
    "unknown_pool_on_edge": "rule r\n  command = x\nbuild a: r\n  pool = nope\n",
    "default_unknown_target": "rule r\n  command = x\nbuild a: r\ndefault b\n",
    "default_no_target": "default\n",
    "empty_path": "rule r\n  command = x\nbuild $e: r\n",
    "empty_input_path": "rule r\n  command = x\nbuild a: r $e\n  e =\n",
    "bad_rule_name": "rule\n",
    "bad_build_keyword_only": "build\n",
    "garbage_statement": "rule r\n  command = x\n: a\n",
    "expected_equals": "foo bar\n",
    "dyndep_not_input": "rule r\n  command = x\nbuild a: r b\n  dyndep = c\nbuild b: phony\n",
    "long_line_caret": "build " + "x" * 80 + ": nope\n",
    "include_missing_path": "include\n",
    "required_version_too_new_late": "rule r\n  command = x\nbuild a: r\nninja_required_version = 99.1\n",
    "error_in_subninja": "subninja sub.ninja\n",
    "cycle": "rule r\n  command = x\nbuild all: phony a\nbuild a: r b\nbuild b: r a\n",
    "self_cycle_non_phony": "rule r\n  command = x\nbuild all: phony a\nbuild a: r a\n",
    "missing_input_no_rule": "rule r\n  command = x\nbuild a: r missing.c\n",
    "no_root_nodes": "rule r\n  command = x\nbuild a: r b\nbuild b: r a\n",
}


@pytest.mark.parametrize("name", sorted(PARSE_ERRORS))
def test_parse_and_graph_errors(differential, name):
    def sc(ws):
        ws.write("build.ninja", PARSE_ERRORS[name])
        ws.write("sub.ninja", "rule r\n  command = x\nbuild s: r\n  bad line here\n")
        r = ws.run("-j1")
        assert r.rc == 1, r
        assert r.stderr.startswith("ninja: "), r
        ws.snapshot()
    differential(sc)
