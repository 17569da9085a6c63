#!/usr/bin/env python3
"""The code blocks of README.md, CONTRIBUTING.md and docs/*.md, run
(docs.snippets; the conventions are in CONTRIBUTING.md, "Snippets in the
documentation").

  snippets.py generate SOURCE_DIR OUT.cpp
      writes one translation unit with every C++ block: fragments (```cpp
      fragment) as functions, programs (```cpp with main) with main renamed;
      its main() runs them in order (those that declare no context).
  snippets.py run SOURCE_DIR BUILD_DIR TARGET PROGRAM CLI
      builds TARGET (the program above) in BUILD_DIR, runs PROGRAM in a
      scratch directory, runs every ```sh block in a scratch directory of
      its own with the CLI as `sandbox` on PATH and as build/bin/sandbox,
      checks that every ```json block parses, and lists what was skipped
      and why. Exit status 1 when one failed.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

FENCE = re.compile(r"^(\s*)(```+)(.*)$")
COMMENT = re.compile(r"^\s*<!--\s*(context|setup):(.*?)-->\s*$", re.S)
# Info-string words that mark a block as shown but not run.
TEXT_LANGUAGES = {"", "text", "console", "markdown"}


class Block:
    def __init__(self, doc, line, language, flags, skip, body, context, setup):
        self.doc = doc
        self.line = line
        self.language = language
        self.flags = flags
        self.skip = skip
        self.body = body
        self.context = context
        self.setup = setup

    @property
    def where(self):
        return f"{self.doc}:{self.line}"


def documents(source_dir):
    docs = ["README.md", "CONTRIBUTING.md"]
    docs += sorted(
        os.path.join("docs", name)
        for name in os.listdir(os.path.join(source_dir, "docs"))
        if name.endswith(".md"))
    return docs


def blocks_of(source_dir, doc):
    """The fenced blocks of `doc`, with the `<!-- context: ... -->` or
    `<!-- setup: ... -->` comment that directly precedes each."""
    with open(os.path.join(source_dir, doc), encoding="utf-8") as f:
        lines = f.read().split("\n")
    out = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m.groups()
        end = i + 1
        while end < len(lines) and lines[end].strip() != fence:
            end += 1
        body = [l[len(indent):] if l.startswith(indent) else l
                for l in lines[i + 1:end]]
        # The comment right before the fence (multi-line allowed).
        context = setup = None
        j = i - 1
        while j >= 0 and lines[j].strip() == "":
            j -= 1
        if j >= 0 and lines[j].strip().endswith("-->"):
            k = j
            while k > 0 and "<!--" not in lines[k]:
                k -= 1
            m2 = COMMENT.match("\n".join(lines[k:j + 1]))
            if m2:
                if m2.group(1) == "context":
                    context = m2.group(2).strip()
                else:
                    setup = m2.group(2).strip()
        info = info.strip()
        skip = None
        at = info.find(" skip:")
        if at >= 0:
            skip = info[at + len(" skip:"):].strip()
            info = info[:at]
        words = info.split()
        language = words[0] if words else ""
        out.append(Block(doc, i + 1, language, words[1:], skip, body, context,
                         setup))
        i = end + 1
    return out


def all_blocks(source_dir):
    for doc in documents(source_dir):
        yield from blocks_of(source_dir, doc)


# -- C++ ---------------------------------------------------------------------

def strip_literals(text):
    """`text` with string and character literals and comments blanked, the
    same length (for brace matching)."""
    out = list(text)
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            for k in range(i, j):
                out[k] = " "
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                out[k] = " " if text[k] != "\n" else "\n"
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            for k in range(i + 1, min(j, n)):
                out[k] = " "
            i = j + 1
        else:
            i += 1
    return "".join(out)


def program_body(where, code):
    """A complete program with its main() renamed to snippet_main(), which
    returns 0 when the text falls off its end (as main does)."""
    m = re.search(r"\bint\s+main\s*\(", code)
    plain = strip_literals(code)
    open_at = plain.find("{", m.end())
    depth = 0
    for i in range(open_at, len(plain)):
        if plain[i] == "{":
            depth += 1
        elif plain[i] == "}":
            depth -= 1
            if depth == 0:
                close_at = i
                break
    else:
        raise SystemExit(f"{where}: main() has no closing brace")
    return (code[:m.start()] + "int snippet_main(" + code[m.end():open_at]
            + "{ return [&]() -> int {" + code[open_at + 1:close_at]
            + "\n  return 0; }();\n}" + code[close_at + 1:])


def generate(source_dir, out_path):
    includes = []
    units = []
    runs = []
    for n, b in enumerate(all_blocks(source_dir)):
        if b.language != "cpp" or b.skip is not None:
            continue
        kept = []
        for line in b.body:
            if line.lstrip().startswith("#include"):
                if line.strip() not in includes:
                    includes.append(line.strip())
                kept.append("")  # keeps the #line numbering
            else:
                kept.append(line)
        code = "\n".join(kept)
        ns = f"snippet_{n}"
        head = f"// {b.where}\nnamespace {ns} {{\n"
        line = f"#line {b.line + 1} \"{b.doc}\"\n"
        if "fragment" in b.flags:
            params = ", ".join(
                p.strip() for p in (b.context or "").split(";") if p.strip())
            units.append(f"{head}[[maybe_unused]] auto fragment({params}) {{\n"
                         f"{line}{code}\n}}\n}} // namespace {ns}\n")
            if not b.context:
                runs.append((b.where, f"{ns}::run"))
                units[-1] = units[-1].replace(
                    f"}} // namespace {ns}\n",
                    "int run() {\n  fragment();\n  return 0;\n}\n"
                    f"}} // namespace {ns}\n")
        elif re.search(r"\bint\s+main\s*\(", code):
            units.append(f"{head}{line}{program_body(b.where, code)}\n"
                         f"}} // namespace {ns}\n")
            runs.append((b.where, f"{ns}::snippet_main"))
    table = "\n".join(f'    {{"{w}", &{f}}},' for w, f in runs)
    text = f"""// Generated by tests/docs/snippets.py from the documentation's C++
// blocks: do not edit.
{chr(10).join(includes)}

#include <cstdio>
#include <cstring>
#include <exception>

// Fragments declare what they use as parameters, and show values they do
// not use again.
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wunused-variable"
#pragma GCC diagnostic ignored "-Wunused-but-set-variable"
#pragma GCC diagnostic ignored "-Wunused-result"
#pragma GCC diagnostic ignored "-Wunused-value"
// A fragment is a piece of a function body: it may return early from the
// function it stands in (`if (!node) return node.error();`) and go on.
#pragma GCC diagnostic ignored "-Wreturn-type"

{chr(10).join(units)}
int main(int argc, char** argv) {{
  struct snippet {{
    const char* where;
    int (*run)();
  }};
  const snippet all[] = {{
{table}
  }};
  int failed = 0;
  for (auto& s : all) {{
    if (argc > 1 && std::strcmp(argv[1], s.where) != 0)
      continue;
    std::printf("run %s\\n", s.where);
    std::fflush(stdout);
    int status = 1;
    try {{
      status = s.run();
    }} catch (const std::exception& e) {{
      std::printf("%s: exception: %s\\n", s.where, e.what());
    }}
    if (status != 0) {{
      std::printf("FAIL %s: status %d\\n", s.where, status);
      ++failed;
    }}
    std::fflush(stdout);
  }}
  return failed == 0 ? 0 : 1;
}}
"""
    old = None
    if os.path.exists(out_path):
        with open(out_path, encoding="utf-8") as f:
            old = f.read()
    if old != text:
        with open(out_path, "w", encoding="utf-8") as f:
            f.write(text)


# -- run ---------------------------------------------------------------------

def run(source_dir, build_dir, target, program, cli):
    program = os.path.abspath(program)
    cli = os.path.abspath(cli)
    failures = []
    skipped = []
    started = time.monotonic()
    for b in all_blocks(source_dir):
        if b.skip is not None:
            if not b.skip:
                failures.append(f"{b.where}: `skip:` without a reason")
            skipped.append(f"{b.where} ({b.language}): {b.skip}")
        elif b.language not in ("cpp", "sh", "json", "cmake") \
                and b.language not in TEXT_LANGUAGES:
            failures.append(f"{b.where}: a ```{b.language} block: use cpp, "
                            "sh, json, or none for output (see "
                            "CONTRIBUTING.md)")
        elif b.language == "cmake":
            failures.append(f"{b.where}: a cmake block must be skipped with a "
                            "reason (nothing runs it)")
        elif b.language == "cpp" and "fragment" not in b.flags \
                and not re.search(r"\bint\s+main\s*\(", "\n".join(b.body)):
            failures.append(f"{b.where}: a C++ block without main(): mark it "
                            "```cpp fragment")
    # C++: one program, built by the build system with the libraries' flags.
    print(f"building {target}", flush=True)
    built = subprocess.run(["cmake", "--build", build_dir, "--target", target],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
    if built.returncode != 0:
        print(built.stdout)
        failures.append(f"the C++ blocks do not compile ({target})")
    else:
        with tempfile.TemporaryDirectory(prefix="sandbox-doc-") as scratch:
            r = subprocess.run([program], cwd=scratch, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True,
                               timeout=120)
            print(r.stdout, end="")
            if r.returncode != 0:
                failures.append("C++ blocks failed: "
                                + "; ".join(l for l in r.stdout.splitlines()
                                            if l.startswith("FAIL")))
    # Shell: each block in a scratch directory of its own.
    for b in all_blocks(source_dir):
        if b.skip is not None:
            continue
        if b.language == "json":
            text = "\n".join(b.body)
            try:
                json.loads(text)
            except ValueError:
                try:
                    for line in text.splitlines():
                        if line.strip():
                            json.loads(line)
                except ValueError as e:
                    failures.append(f"{b.where}: not JSON: {e}")
            continue
        if b.language != "sh":
            continue
        with tempfile.TemporaryDirectory(prefix="sandbox-doc-") as scratch:
            bin_dir = os.path.join(scratch, "build", "bin")
            os.makedirs(bin_dir)
            os.symlink(cli, os.path.join(bin_dir, "sandbox"))
            env = dict(os.environ)
            env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
            script = "set -e\n"
            if b.setup:
                script += b.setup + "\n"
            script += "\n".join(b.body) + "\n"
            print(f"run {b.where}", flush=True)
            try:
                r = subprocess.run(["sh", "-c", script], cwd=scratch, env=env,
                                   stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True,
                                   timeout=60)
                status = r.returncode
                output = r.stdout
            except subprocess.TimeoutExpired as e:
                status, output = "timeout", str(e.stdout or "")
            if status != 0:
                print(output)
                failures.append(f"{b.where}: sh block: status {status}")
    for s in skipped:
        print(f"skipped {s}")
    print(f"{time.monotonic() - started:.1f} s")
    for f in failures:
        print(f"FAIL {f}")
    return 1 if failures else 0


def main(argv):
    if len(argv) == 4 and argv[1] == "generate":
        generate(argv[2], argv[3])
        return 0
    if len(argv) == 7 and argv[1] == "run":
        return run(*argv[2:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
