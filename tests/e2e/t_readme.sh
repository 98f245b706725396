# Every command of README.md's Usage block, run as a new user runs it: in a
# scratch copy of the repository (its tracked and new files, committed to a
# scratch git), each must exit 0, and afterwards `git status --porcelain`
# must be empty -- the commands write only where they say (out/, which git
# ignores), never into the checkout. The window command (viz without
# --headless) runs under Xvfb and is closed by its test mode (--script q).
R=$T/repo
mkdir -p "$R"
(cd "$TPU_ROOT" && git ls-files -z --cached --others --exclude-standard) \
  | (cd "$TPU_ROOT" && xargs -0 tar -cf - --no-recursion 2>/dev/null) | tar -xf - -C "$R" \
  || die "cannot copy the repository"
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t
git -C "$R" init -q && git -C "$R" add -A && git -C "$R" commit -qm scratch || die "cannot make the scratch git"
ln -s "$TPUSIM" "$R/tpusim"
[ -z "$(git -C "$R" status --porcelain)" ] || die "the scratch copy is not clean before the commands"

# the Usage block: the first ```sh block after '## Usage'
/usr/bin/python3 - "$R/README.md" > cmds.txt <<'PY' || die "README.md has no Usage block"
import sys
text = open(sys.argv[1]).read()
i = text.index("\n## Usage\n")
a = text.index("```sh\n", i) + 6
b = text.index("```", a)
for line in text[a:b].splitlines():
    line = line.split("  #")[0].strip()
    if line:
        print(line)
PY
[ "$(wc -l < cmds.txt)" -ge 15 ] || die "only $(wc -l < cmds.txt) commands in the Usage block"
has_x=1; has_xvfb || has_x=0
n=0
while IFS= read -r cmd; do
  case "$cmd" in
    "./tpusim viz"*--headless*|"./tpusim viz"*--help*) ;;
    "./tpusim viz"*)
      if [ "$has_x" = 0 ]; then echo "t_readme: SKIP: '$cmd' (Xvfb is not installed)"; continue; fi
      cmd="window $cmd --script q" ;;
  esac
  set +e
  case "$cmd" in
    window*) (cd "$R" && window bash -c "${cmd#window }") ;;
    *) (cd "$R" && bash -c "$cmd") ;;
  esac > out.txt 2> err.txt; rc=$?
  set -e
  [ "$rc" = 0 ] || die "README's '$cmd' exited $rc: $(tail -5 err.txt)"
  n=$((n + 1))
done < cmds.txt
st=$(git -C "$R" status --porcelain --ignored=no)
[ -z "$st" ] || die "README's commands changed the checkout: $st"
[ -s "$R/out/c.npy" ] && [ -s "$R/out/run.json" ] && [ -d "$R/out/tpu_128x128_ws" ] \
  && [ -d "$R/out/tpu_128x128_ws_tpu-v2-8_8cores" ] || die "README's outputs are not in out/: $(ls "$R/out")"
