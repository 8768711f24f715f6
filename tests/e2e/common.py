"""Shared manifest snippets for the e2e scenarios.

Every rule that runs a command appends its output name to cmds.log, so a run's record lists the commands that ran.
"""

RULES = """\
rule cat
  command = echo $out >> cmds.log && cat $in > $out
  description = CAT $out
rule touch
  command = echo $out >> cmds.log && touch $out
rule cc
  command = echo $out >> cmds.log && cat $in > $out
"""


def manifest(*parts: str) -> str:
    return RULES + "".join(parts)
