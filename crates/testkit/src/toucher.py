# A process whose memory grows on command, for tests of how crest reads memory.
# argv: shared|private SIZE_BYTES. It maps SIZE_BYTES of anonymous memory, shared or private,
# touches none of it, and says "ready". Then, one command a line on stdin:
#   touch N         touches the next N bytes now, then says "touched DONE"
#   ramp RATE SECS  touches RATE bytes a second for SECS seconds, a tenth of a second at a time,
#                   saying "ramping" first; it reads no command meanwhile
# It exits when stdin closes, so it never outlives a test by more than a ramp.
import mmap
import sys
import time

kind, size = sys.argv[1], int(sys.argv[2])
flags = mmap.MAP_SHARED if kind == "shared" else mmap.MAP_PRIVATE
region = mmap.mmap(-1, size, flags=flags)
page = mmap.PAGESIZE
done = 0


def touch_to(target):
    global done
    target = min(size, target - target % page)
    for i in range(done, target, page):
        region[i] = 1
    done = max(done, target)


print("ready", flush=True)
for line in sys.stdin:
    words = line.split()
    if not words:
        continue
    if words[0] == "touch":
        touch_to(done + int(words[1]))
        print("touched", done, flush=True)
    elif words[0] == "ramp":
        rate, secs = int(words[1]), float(words[2])
        print("ramping", flush=True)
        base, start = done, time.monotonic()
        while (elapsed := time.monotonic() - start) < secs:
            touch_to(base + int(rate * elapsed))
            time.sleep(0.1)
