# Builds the problem lists for the live runs from the exhaustive timing DB (out/timing/h100_132.db)
# and the trainer's split (tools/tunecast_train/data.py, seed 0).
import csv, sqlite3, sys
sys.path.insert(0, "tools")
sys.path.insert(0, "tools/gpu_timing")
from tunecast_train.data import descriptor_text, split_of
from shapes import problem_row
shapes = list(csv.DictReader(open("tools/gpu_timing/shapes.csv")))
con = sqlite3.connect("out/timing/h100_132.db")
have = set()
for r in con.execute("select data_type,batchsize,in_channels,out_channels,in_h,in_w from config"):
    have.add(tuple(map(str, r)))
def line(s, dt):
    return f"dir=F,dtype={dt},layout=NHWC,n={s['n']},c={s['c']},k={s['k']},h={s['h']},w={s['w']},y=1,x=1,arch=h100"
def pick(split, dt, count, start=0):
    out = []
    for i, s in enumerate(shapes[start:], start):
        shp = tuple(int(s[x]) for x in "nckhw")
        if split_of(descriptor_text(problem_row(shp, dt))) != split: continue
        if (dt, s['n'], s['c'], s['k'], s['h'], s['w']) not in have: continue
        out.append((i, line(s, dt)))
        if len(out) == count: break
    return out
test = pick("test", "FP16", 24)
train = pick("train", "FP16", 8)
for name, rows, note in (("p24_test.txt", test, "24 FP16 test-split shapes (trainer split seed 0), first in shapes.csv order, all in out/timing/h100_132.db"),
                         ("train8.txt", train, "8 FP16 train-split shapes (trainer split seed 0), first in shapes.csv order, all in out/timing/h100_132.db")):
    with open("out/live/" + name, "w") as f:
        f.write(f"# {note}\n")
        for i, l in rows: f.write(f"{l}  # shape {i}\n")
    print(name, [i for i, _ in rows])
