"""Checks that every `--vram-*` pass or pipeline in `vram-opt --help`, with
each of its options, has an entry in the reference docs (docs/reference/*.md:
a `### \`-name\`` heading, then its options as `-option` lines).

Usage: check_reference.py HELP_TEXT REFERENCE_DIR
Prints "N passes and M pipelines, every option documented", or what is
missing (and exits 1)."""
import pathlib
import re
import sys


def registered(help_text):
    """{name: [options]} for each --vram-* entry of the pass list."""
    entries = {}
    current = None
    for line in help_text.splitlines():
        entry = re.match(r"^      --(vram-[a-z0-9-]+)\b", line)
        option = re.match(r"^        --([a-z0-9-]+)\b", line)
        if entry:
            current = entry.group(1)
            entries[current] = []
        elif option and current:
            entries[current].append(option.group(1))
        elif not line.startswith("         "):
            current = None
    return entries


def documented(reference_dir):
    """{name: text of its section} over every page of the reference."""
    sections = {}
    for page in pathlib.Path(reference_dir).rglob("*.md"):
        parts = re.split(r"^### `-(vram-[a-z0-9-]+)`", page.read_text(),
                         flags=re.M)
        for name, body in zip(parts[1::2], parts[2::2]):
            sections[name] = body
    return sections


def main():
    entries = registered(pathlib.Path(sys.argv[1]).read_text())
    sections = documented(sys.argv[2])
    problems = []
    for name, options in sorted(entries.items()):
        if name not in sections:
            problems.append(f"{name}: no section")
            continue
        for option in options:
            if not re.search(rf"^-{re.escape(option)}\b", sections[name],
                             flags=re.M):
                problems.append(f"{name}: option {option} not documented")
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    pipelines = [name for name in entries if name.startswith("vram-lower-to")]
    print(f"{len(entries) - len(pipelines)} passes and {len(pipelines)} "
          "pipelines, every option documented")


main()
