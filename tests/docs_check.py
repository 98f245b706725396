#!/usr/bin/env python3
"""Documents agree with the tool (tests/e2e/t_docs.sh runs it).

  docs_check.py ROOT      exit 1 and one line per disagreement

Versions. The version is defined once, TPU_VERSION in base/base.h. In
README.md, CHANGELOG.md, CITATION.cff and docs/*.md:
  - a version that names this build ("tpusim X.Y.Z", "version X.Y.Z",
    CITATION's "version:") is TPU_VERSION;
  - any other tpusim version named is a released one: it has a heading in
    CHANGELOG.md (the newest of which is TPU_VERSION); a version not yet
    released is not named ("the next minor release" is);
  - other software's versions (Keras 2.15.0, ...) are told apart by the
    product named just before them (OTHER below).
Definitions. A few terms are defined in docs/JSON.md, "Shared meanings",
and restated in README.md: each such restatement must carry the defining
phrase of JSON.md's (DEFINITIONS below), and definitions that were once
written and are wrong are refused wherever they appear (STALE).
"""
import glob, os, re, sys

SEMVER = re.compile(r"(?<![\w.])v?(\d+\.\d+\.\d+)(-[0-9A-Za-z.]+)?(?![\w.]*\d)")
# a version right after one of these belongs to that product, not to tpusim
OTHER = re.compile(r"(keras|tensorflow|tf|python|numpy|jansson|openblas|slurm|scale-?sim|sdl2?|gcc|clang|"
                   r"cff-version|onnx|protobuf|debian|libjpeg|libpng|zlib|check)[\s:=_v-]*(version\s*)?$", re.I)
THIS = re.compile(r"(tpusim|release: version|^version:)\s*v?$", re.I)
# term: (phrase JSON.md's definition has, phrase a README restatement must have)
DEFINITIONS = {
    "MXU utilization": ("workload's own multiply-adds", "own M·N·K multiply-adds"),
}
STALE = ["MACs done by the array over cells", "MACs done by the array over\ncells"]


def version(root):
    m = re.search(r'#define TPU_VERSION "([^"]+)"', open(os.path.join(root, "base/base.h")).read())
    return m.group(1)


def released(root):
    return re.findall(r"^## (\d+\.\d+\.\d+)\b", open(os.path.join(root, "CHANGELOG.md")).read(), re.M)


def check_versions(root, v, rel, bad):
    if not rel or rel[0] != v:
        bad.append("CHANGELOG.md: newest release heading is %s, TPU_VERSION is %s" % (rel[0] if rel else "none", v))
    files = ["README.md", "CHANGELOG.md", "CITATION.cff"] + sorted(glob.glob(os.path.join(root, "docs/*.md")))
    for f in files:
        path = os.path.join(root, f)
        for ln, line in enumerate(open(path), 1):
            for m in SEMVER.finditer(line):
                before = line[:m.start()]
                where = "%s:%d" % (os.path.relpath(path, root), ln)
                if OTHER.search(before):
                    continue
                ver, suffix = m.group(1), m.group(2) or ""
                if suffix:
                    bad.append("%s: version %s%s: tpusim's versions have no suffix (TPU_VERSION is %s)" %
                               (where, ver, suffix, v))
                elif THIS.search(before) and ver != v:
                    bad.append("%s: names this build %s, TPU_VERSION is %s" % (where, ver, v))
                elif ver not in rel:
                    bad.append("%s: version %s is not a release in CHANGELOG.md (%s); say 'the next release' "
                               "or name a released one" % (where, ver, ", ".join(rel)))


def check_definitions(root, bad):
    json_md = open(os.path.join(root, "docs/JSON.md")).read()
    readme = open(os.path.join(root, "README.md")).read()
    for term, (in_json, in_readme) in DEFINITIONS.items():
        if in_json not in json_md:
            bad.append("docs/JSON.md: the definition of %s lacks '%s'" % (term, in_json))
        # every README paragraph that defines the term: "TERM (" opening a parenthesis
        for para in re.split(r"\n\s*\n", readme):
            flat = " ".join(para.split())
            if re.search(re.escape(term) + r" \((?!`)", flat) and in_readme not in flat:
                bad.append("README.md: a definition of %s without '%s' (docs/JSON.md's): %.80s..." %
                           (term, in_readme, flat[flat.index(term):]))
    for f in ["README.md"] + sorted(glob.glob(os.path.join(root, "docs/*.md"))):
        text = open(os.path.join(root, f)).read()
        for s in STALE:
            if s in text:
                bad.append("%s: the stale definition '%s'" % (os.path.relpath(os.path.join(root, f), root),
                                                             s.replace("\n", " ")))


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    bad = []
    v = version(root)
    check_versions(root, v, released(root), bad)
    check_definitions(root, bad)
    for b in bad:
        print(b)
    print("docs: %d problems (TPU_VERSION %s)" % (len(bad), v))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
