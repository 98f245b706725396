# Documents agree with the tool (tests/docs_check.py): every version string
# in README.md, CHANGELOG.md, CITATION.cff and docs/ against TPU_VERSION and
# CHANGELOG's releases, and README's definitions against docs/JSON.md's.
# The checker passes on the tree and fails on each kind of disagreement,
# shown on a copy.
/usr/bin/python3 "$TPU_ROOT/tests/docs_check.py" "$TPU_ROOT" > docs.txt || { cat docs.txt; die "docs disagree"; }
C=$T/copy
mkdir -p "$C/base" "$C/docs"
cp "$TPU_ROOT"/{README.md,CHANGELOG.md,CITATION.cff} "$C/"
cp "$TPU_ROOT/base/base.h" "$C/base/"
cp "$TPU_ROOT"/docs/*.md "$C/docs/"
/usr/bin/python3 "$TPU_ROOT/tests/docs_check.py" "$C" >/dev/null || die "the copy should pass"
v=$(sed -n 's/^#define TPU_VERSION "\(.*\)"/\1/p' "$TPU_ROOT/base/base.h")
bad() {  # bad FILE TEXT EXPECTED: appending TEXT to FILE must be refused with EXPECTED
  cp "$C/$1" "$T/keep"
  printf '\n%s\n' "$2" >> "$C/$1"
  expect_status 1 /usr/bin/python3 "$TPU_ROOT/tests/docs_check.py" "$C"
  expect_out_contains "$3"
  cp "$T/keep" "$C/$1"
}
bad docs/SWEEPS.md "Results (tpusim 9.9.9, today)" "names this build 9.9.9, TPU_VERSION is $v"
bad docs/SEED_EXPERIMENT.md "Results (tpusim $v-dev)" "versions have no suffix"
bad docs/TRAINING.md "an alias, to be removed in 7.0.0" "version 7.0.0 is not a release in CHANGELOG.md"
bad CITATION.cff "version: 0.0.9" "names this build 0.0.9"
bad README.md "MXU utilization (MACs done by the array over cells × cycles)" "a definition of MXU utilization without"
bad docs/TEACHING.md "utilization is MACs done by the array over cells x cycles" "the stale definition"
# another product's version is not tpusim's
cp "$C/docs/MODELS.md" "$T/keep"; printf '\nsaved by Keras 3.3.3 and TensorFlow 2.16.1\n' >> "$C/docs/MODELS.md"
/usr/bin/python3 "$TPU_ROOT/tests/docs_check.py" "$C" >/dev/null || die "Keras' version taken for tpusim's"
cp "$T/keep" "$C/docs/MODELS.md"
