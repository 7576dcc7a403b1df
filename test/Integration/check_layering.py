"""Checks that vram's libraries only include headers of their own layer or
the layers below (docs/using.md, "Layers"):

  Registration (vram/InitAll.h)
  Transforms, Pipelines
  Planning, Training, Parallel, Conversion
  Analysis, Import, Runner
  Planner, Arena
  Dialect
  Support

Usage: check_layering.py SOURCE_ROOT. Prints each upward include and exits 1,
or prints "N files, no upward include"."""
import pathlib
import re
import sys

LAYERS = [["Support"], ["Dialect"], ["Planner", "Arena"],
          ["Analysis", "Import", "Runner"],
          ["Planning", "Training", "Parallel", "Conversion"],
          ["Transforms", "Pipelines"],
          ["Registration"]]
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}


def component(path, root):
    """The library a file belongs to: lib/<C>/..., include/vram/<C>/...;
    include/vram/InitAll.h is the registration library's."""
    parts = path.relative_to(root).parts
    if parts[0] == "lib":
        return parts[1]
    return parts[2] if len(parts) > 3 else "Registration"


def main():
    root = pathlib.Path(sys.argv[1])
    files = [path for pattern in ("lib/**/*.cpp", "lib/**/*.h",
                                  "include/vram/**/*.h")
             for path in root.glob(pattern)]
    problems = []
    for path in files:
        own = component(path, root)
        for included in re.findall(r'#include "vram/([A-Za-z]+)[/.]',
                                   path.read_text()):
            included = "Registration" if included == "InitAll" else included
            if RANK[included] > RANK[own]:
                problems.append(f"{path.relative_to(root)}: {own} includes "
                                f"{included}, a layer above it")
    if problems:
        print("\n".join(sorted(problems)))
        sys.exit(1)
    print(f"{len(files)} files, no upward include")


main()
