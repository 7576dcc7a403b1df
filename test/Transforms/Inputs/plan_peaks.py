"""Reads a --report and prints whether its plan's peak stays at or below
the unplanned peak, and how many recomputations it made."""
import re
import sys

line = next(l for l in sys.stdin.readlines() if l.startswith("Plan of"))
planned = int(re.search(r"planned peak ([\d,]+) B", line)[1].replace(",", ""))
unplanned = int(re.search(r"unplanned ([\d,]+) B", line)[1].replace(",", ""))
recomputations = re.search(r"(\d+) recomputations", line)[1]
relation = "<=" if planned <= unplanned else ">"
print(f"{recomputations} recomputations, planned peak {relation} unplanned "
      f"peak ({planned:,} vs {unplanned:,})")
