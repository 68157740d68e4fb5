"""What the two reports (bench/consistency/report.py, bench/study/report.py) share: the CSV files
behind their tables and plots, and a markdown page whose plots tl-report draws. Python's
standard library only."""
import csv
import os
import subprocess


def write_csv(path, header, rows, digits=17):
    """Floats with `digits` significant digits (17: every bit of a double)."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        for row in rows:
            w.writerow([("%.*g" % (digits, v)) if isinstance(v, float) else v for v in row])


class Report:
    """The lines of OUT/README.md; args needs .tl_report (the binary) and .out (the folder)."""

    def __init__(self, args):
        self.args = args
        self.lines = []

    def md(self, text=""):
        self.lines.append(text)

    def plot(self, name, title, xlabel, ylabel, series, log_y=False, markers=False):
        """series: (label, CSV file name in OUT, x column, y column) per line."""
        cmd = [self.args.tl_report, "plot", "--out", os.path.join(self.args.out, name), "--title", title,
               "--x-label", xlabel, "--y-label", ylabel]
        cmd += ["--series", ";".join("%s=%s:%s:%s" % (label, os.path.join(self.args.out, csv_name), x, y)
                                     for label, csv_name, x, y in series)]
        if log_y:
            cmd.append("--log-y")
        if markers:
            cmd.append("--markers")
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        self.md("![%s](%s)\n" % (title, name))
