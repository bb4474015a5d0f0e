"""record/dormant.py: make run AGAINST='B ...' WORKLOAD='A ...''s folder
(results/<stamp>-dormant/): meta.json stamped KIND, dormant.csv (a row per
timed run of A or B), the verdict words, and the method's names.  Written
by measure/dormant.py, read by render/dormant.py (the statistics:
stats/paired.py).

Nothing to run.
"""
KIND = "dormant"  # meta.json's "kind"
DORMANT_CSV = "dormant.csv"
# threads: copies of the command at once; round: a round (0..), its order
# (ABBA or BAAB, random; a duet's: AB, A on the first CPU) and stage (pilot,
# then more); side: A or B; slot: 0..3 within an ABBA round, 0..1 a duet's
# (each slot A and B at once); cpu: the CPU a duet's run was held to (-1:
# any); wall_ns: from the first copy's start to the last's end; user_ns,
# sys_ns: the copies' CPU (rusage of children)
COLUMNS = ["threads", "round", "order", "stage", "side", "slot", "cpu", "wall_ns", "user_ns",
           "sys_ns"]
PILOT, MORE = "pilot", "more"
# The verdicts, one home: A dearer than B, cheaper, or no difference
# detectable above the half-width reached.
DEARER, CHEAPER, SAME = "dearer", "cheaper", "same"
VERDICTS = (DEARER, CHEAPER, SAME)
# How A and B were paired (the answer names it): whole runs of each
# command, alternated A B B A or B A A B in rounds (the order of each round
# random); or side by side, A and B at once on two CPUs and then on each
# other's (a duet: Bulej et al., ICPE 2020), one copy each.  Either way a
# round's ratio of A's time to B's is one paired figure.
ABBA, DUET = "abba", "duet"
METHODS = {ABBA: "ABBA rounds of whole runs, order random each round; a round's A/B time "
                 "ratio is one figure; Stein's second stage on a pilot of them says how many",
           DUET: "duet rounds: A and B at once on two CPUs, then swapped; a round's A/B time "
                 "ratio is one figure; Stein's second stage on a pilot of them says how many"}
