#!/usr/bin/env python3
"""mkman.py TPUSIM > tpusim.1 -- the man page, generated from the program's
own --help texts (`tpusim --help`, `tpusim --version`, and `tpusim CMD --help`
for every command the top-level help lists), so the two cannot drift.
Debian's help2man does the same for one-level programs; tpusim's options
live in its subcommands, hence this small generator."""
import re, subprocess, sys

def run(*args):
    return subprocess.run(list(args), check=True, capture_output=True, text=True).stdout

def esc(line):
    line = line.replace("\\", "\\e").replace("-", "\\-")
    return ("\\&" + line) if line.startswith((".", "'")) else line

def block(text):
    out = [".nf"]
    out += [esc(l) for l in text.rstrip("\n").split("\n")]
    return out + [".fi"]

def main():
    exe = sys.argv[1]
    top = run(exe, "--help")
    version = run(exe, "--version").split()[-1]
    m = re.search(r"^commands:\n((?:  \S.*\n)+)", top, re.M)
    cmds = [(l.split()[0], l.split(None, 1)[1].strip()) for l in m.group(1).splitlines()]
    first = top.splitlines()[0]
    out = ['.TH TPUSIM 1 "" "tpusim %s" "User Commands"' % version, ".SH NAME",
           "tpusim \\- " + esc(first.split(" -- ", 1)[-1]),
           ".SH SYNOPSIS", ".B tpusim", "\\fICOMMAND\\fR [\\fIoptions\\fR]", ".br", ".B tpusim --version",
           ".SH DESCRIPTION"] + block("\n".join(top.splitlines()[1:]))
    for name, summary in cmds:
        out += [".SH COMMAND: %s" % esc(name.upper()), esc(summary)] + block(run(exe, name, "--help"))
    out += [".SH VERSION", "tpusim %s" % esc(version),
            ".SH SEE ALSO", "The documentation installed with the examples (share/doc/tpusim)."]
    sys.stdout.write("\n".join(out) + "\n")

main()
