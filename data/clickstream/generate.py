"""Generate ``events.jsonl``: two simulated hours of a web shop's clickstream, byte for byte reproducible.

Theory of operation
-------------------
Visitors arrive as a non-homogeneous Poisson process (thinning): a slow rise and fall over the two hours plus a
promotion e-mail at 20:00 that doubles the arrival rate for about ten minutes, so event-time windows have
visibly different counts. Each arrival is a *session* of one *user*; a few users are much more active than the
rest (Zipf-like weights), so many users have several sessions. A session walks a small state machine --
landing page, browsing categories and products (popular products are viewed far more often: Zipf weights over
the catalogue, with a pull toward the category being browsed), ``add_to_cart`` of a product just viewed,
sometimes ``remove_from_cart``, ``checkout`` of the cart, and ``purchase`` of each cart line -- with
think times between clicks drawn from a log-normal distribution.

Every event has an *event time* (when the click happened, in the browser) and an *arrival time* (when the shop's
collector received it). The file is written in **arrival order**. For almost all events the two coincide; a
small fraction of events is delayed 1-30 s (a phone on a slow network batching its beacons: *out of order*), and a
handful is delayed 3-10 minutes (an app that was offline and flushed its queue later: *late*). Nothing in an
event says which it is: a reader finds them by their position, exactly as a stream processor must
(``python generate.py --stats`` counts them; ``data/README.md`` gives the rule).

Only ``random.Random(seed).random()`` and ``getrandbits`` are used (never the module-level generator, never
``choices``/``gauss``, whose algorithms are free to change between Python versions), integer milliseconds and
integer cents, and ``json.dumps`` with fixed separators, so the same seed gives the same bytes everywhere.

Usage::

    python data/clickstream/generate.py            # (re)write data/clickstream/events.jsonl
    python data/clickstream/generate.py --check    # regenerate in memory, compare with the file (exit 1 if not equal)
    python data/clickstream/generate.py --stats    # counts by type, sizes, out-of-order and late events
"""
from __future__ import annotations

import argparse
import bisect
import datetime as _dt
import hashlib
import json
import math
import random
import sys
from collections import Counter
from pathlib import Path

SEED = 20260314
START = _dt.datetime(2026, 3, 14, 19, 0, 0, tzinfo=_dt.timezone.utc)   # a Saturday evening
DURATION_S = 2 * 3600
HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "events.jsonl"

#: Fixed key order of every event (``null`` where a field does not apply).
FIELDS = ("event_id", "event_time", "user_id", "session_id", "event_type", "page", "product_id", "category",
          "price", "quantity", "country", "device")
EVENT_TYPES = ("page_view", "add_to_cart", "remove_from_cart", "checkout", "purchase")

#: Rules of the delays between event time and arrival time (documented in data/README.md).
OUT_OF_ORDER_FRACTION = 0.02        # delayed 1..30 s
OUT_OF_ORDER_DELAY_MS = (1_000, 30_000)
LATE_FRACTION = 0.002               # delayed 3..10 min
LATE_DELAY_MS = (180_000, 600_000)
#: A reader calls an event *late* when its event time is more than this behind the largest event time before it.
LATE_THRESHOLD_MS = 60_000

CATEGORIES = (("electronics", 4_999, 1.0), ("books", 1_499, 0.45), ("fashion", 3_999, 0.6),
              ("home", 2_999, 0.7), ("sports", 3_499, 0.7), ("toys", 1_999, 0.5), ("beauty", 1_799, 0.5),
              ("garden", 2_499, 0.6))          # name, median price in cents, log-normal sigma
PRODUCTS_PER_CATEGORY = 40
N_USERS = 1_800
TARGET_SESSIONS_PER_S = 0.34        # mean session arrival rate before the promotion spike

COUNTRIES = (("US", 30), ("DE", 14), ("GB", 12), ("FR", 9), ("NL", 6), ("ES", 6), ("IT", 5), ("PL", 4),
             ("SE", 3), ("CA", 5), ("AU", 3), ("BR", 3))
DEVICES = (("mobile", 58), ("desktop", 35), ("tablet", 7))
SEARCH_TERMS = ("headphones", "laptop", "novel", "running shoes", "lamp", "lego", "lipstick", "tent", "jacket",
                "coffee", "charger", "yoga mat", "sofa", "watch", "seeds")


# -- randomness from random() only ------------------------------------------------------------------------------
class Draw:
    """The few distributions the generator needs, built on ``Random.random()`` alone."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def random(self) -> float:
        return self.rng.random()

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def below(self, n: int) -> int:
        return min(int(self.rng.random() * n), n - 1)

    def between(self, lo: int, hi: int) -> int:
        """An integer in [lo, hi]."""
        return lo + self.below(hi - lo + 1)

    def expo(self, mean: float) -> float:
        return -mean * math.log(1.0 - self.rng.random())

    def normal(self) -> float:
        u1, u2 = 1.0 - self.rng.random(), self.rng.random()
        return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)

    def lognormal(self, median: float, sigma: float) -> float:
        return median * math.exp(sigma * self.normal())

    def hex(self, digits: int) -> str:
        return f"{self.rng.getrandbits(4 * digits):0{digits}x}"


class Weighted:
    """Pick from items with weights (cumulative table + bisect)."""

    def __init__(self, items, weights):
        self.items = list(items)
        self.cum = []
        total = 0.0
        for w in weights:
            total += w
            self.cum.append(total)
        self.total = total

    def pick(self, d: Draw):
        return self.items[min(bisect.bisect_right(self.cum, d.random() * self.total), len(self.items) - 1)]


def zipf(n: int, s: float) -> list:
    return [1.0 / (i + 1) ** s for i in range(n)]


# -- the world: catalogue and users ---------------------------------------------------------------------------
def build_catalogue(d: Draw):
    products = []          # (product_id, category, price_cents)
    for ci, (cat, median, sigma) in enumerate(CATEGORIES):
        for j in range(PRODUCTS_PER_CATEGORY):
            cents = max(299, int(d.lognormal(median, sigma) / 100) * 100 + 99)   # prices end in .99
            products.append((f"p{ci}{j:03d}", cat, cents))
    # popularity: Zipf over a shuffled catalogue (Fisher-Yates with our own draws)
    order = list(range(len(products)))
    for i in range(len(order) - 1, 0, -1):
        j = d.below(i + 1)
        order[i], order[j] = order[j], order[i]
    weights = [0.0] * len(products)
    for rank, idx in enumerate(order):
        weights[idx] = 1.0 / (rank + 1) ** 1.1
    overall = Weighted(range(len(products)), weights)
    by_cat = {}
    for cat, _, _ in CATEGORIES:
        idxs = [i for i, p in enumerate(products) if p[1] == cat]
        by_cat[cat] = Weighted(idxs, [weights[i] for i in idxs])
    cat_pick = Weighted([c for c, _, _ in CATEGORIES], [sum(weights[i] for i in by_cat[c].items)
                                                        for c, _, _ in CATEGORIES])
    return products, overall, by_cat, cat_pick


def build_users(d: Draw):
    countries = Weighted([c for c, _ in COUNTRIES], [w for _, w in COUNTRIES])
    devices = Weighted([c for c, _ in DEVICES], [w for _, w in DEVICES])
    users = [(f"u{i:05d}", countries.pick(d), devices.pick(d)) for i in range(N_USERS)]
    order = list(range(N_USERS))
    for i in range(N_USERS - 1, 0, -1):
        j = d.below(i + 1)
        order[i], order[j] = order[j], order[i]
    weights = [0.0] * N_USERS
    for rank, idx in enumerate(order):
        weights[idx] = 1.0 / (rank + 1) ** 0.6
    return users, Weighted(range(N_USERS), weights)


def session_rate(t: float) -> float:
    """Sessions per second at ``t`` seconds into the window: an evening hump, plus a promotion at 20:00."""
    hump = 0.55 + 0.45 * math.sin(math.pi * t / DURATION_S)
    promo = 1.0 if not 3600 <= t < 4500 else 1.0 + 1.2 * math.exp(-(t - 3600) / 300)
    return TARGET_SESSIONS_PER_S * hump * promo


def session_starts(d: Draw) -> list:
    lam_max = TARGET_SESSIONS_PER_S * 2.2
    t, out = 0.0, []
    while True:
        t += d.expo(1.0 / lam_max)
        if t >= DURATION_S:
            return out
        if d.random() * lam_max < session_rate(t):
            out.append(int(t * 1000))


# -- one session --------------------------------------------------------------------------------------------
def think_ms(d: Draw) -> int:
    return min(int(d.lognormal(12_000, 0.9)), 300_000) + 300


def run_session(d: Draw, start_ms: int, user, session_id: str, catalogue) -> list:
    """The clicks of one session: [(event_time_ms, fields-dict)], in event-time order."""
    products, overall, by_cat, cat_pick = catalogue
    user_id, country, device = user
    t = start_ms
    out = []
    cart: dict = {}              # product index -> quantity (insertion order = cart order)

    def emit(event_type, page, pidx=None, cents=None, quantity=None, category=None):
        pid, cat = (products[pidx][0], products[pidx][1]) if pidx is not None else (None, category)
        out.append((t, {"event_type": event_type, "page": page, "product_id": pid, "category": cat,
                        "price": None if cents is None else cents / 100, "quantity": quantity,
                        "user_id": user_id, "session_id": session_id, "country": country, "device": device}))

    # landing
    r = d.random()
    browsing_cat = None
    last_product = None
    if r < 0.40:
        emit("page_view", "/")
    elif r < 0.58:
        emit("page_view", "/search?q=" + SEARCH_TERMS[d.below(len(SEARCH_TERMS))].replace(" ", "+"))
    elif r < 0.78:
        browsing_cat = cat_pick.pick(d)
        emit("page_view", "/c/" + browsing_cat, category=browsing_cat)
    else:                                          # an ad straight to a product page
        last_product = overall.pick(d)
        browsing_cat = products[last_product][1]
        emit("page_view", "/p/" + products[last_product][0], last_product, products[last_product][2])

    for _ in range(60):
        t += think_ms(d)
        if d.chance(0.13 if not cart else 0.08):
            break                                  # left the shop
        r = d.random()
        if last_product is not None and r < 0.17:
            q = 1 if d.chance(0.85) else 2
            cart[last_product] = cart.get(last_product, 0) + q
            emit("add_to_cart", "/p/" + products[last_product][0], last_product, products[last_product][2], q)
            last_product = None
        elif cart and r < 0.21:
            pidx = list(cart)[d.below(len(cart))]
            q = cart.pop(pidx)
            emit("remove_from_cart", "/cart", pidx, products[pidx][2], q)
        elif cart and r < 0.36:
            total = sum(products[p][2] * q for p, q in cart.items())
            emit("checkout", "/checkout", cents=total, quantity=sum(cart.values()))
            if d.chance(0.72):
                t += think_ms(d) + 20_000          # typing in the card details
                for pidx, q in cart.items():
                    emit("purchase", "/order/confirmation", pidx, products[pidx][2], q)
                break
            # abandoned at the payment step: maybe keep browsing
            if d.chance(0.6):
                break
        elif r < 0.48:
            browsing_cat = cat_pick.pick(d) if browsing_cat is None or d.chance(0.3) else browsing_cat
            emit("page_view", "/c/" + browsing_cat, category=browsing_cat)
            last_product = None
        elif r < 0.53:
            emit("page_view", "/search?q=" + SEARCH_TERMS[d.below(len(SEARCH_TERMS))].replace(" ", "+"))
            last_product = None
        else:
            if browsing_cat is not None and d.chance(0.7):
                last_product = by_cat[browsing_cat].pick(d)
            else:
                last_product = overall.pick(d)
                browsing_cat = products[last_product][1]
            emit("page_view", "/p/" + products[last_product][0], last_product, products[last_product][2])
    return out


# -- the whole file -----------------------------------------------------------------------------------------
def iso(ms: int) -> str:
    t = START + _dt.timedelta(milliseconds=ms)
    return f"{t:%Y-%m-%dT%H:%M:%S}.{t.microsecond // 1000:03d}Z"


def generate(seed: int = SEED) -> bytes:
    """The file's bytes for ``seed``."""
    d = Draw(seed)
    catalogue = build_catalogue(d)
    users, user_pick = build_users(d)
    events = []                                    # (arrival_ms, seq, event-dict)
    seen_ids = set()
    for n, start in enumerate(session_starts(d)):
        user = users[user_pick.pick(d)]
        for ts, ev in run_session(d, start, user, f"s{n:05d}", catalogue):
            if ts >= DURATION_S * 1000:
                break                              # the window closes
            r = d.random()
            if r < LATE_FRACTION:
                delay = d.between(*LATE_DELAY_MS)
            elif r < LATE_FRACTION + OUT_OF_ORDER_FRACTION:
                delay = d.between(*OUT_OF_ORDER_DELAY_MS)
            else:
                delay = 0
            eid = d.hex(12)
            while eid in seen_ids:
                eid = d.hex(12)
            seen_ids.add(eid)
            ev["event_id"] = eid
            ev["event_time"] = iso(ts)
            events.append((ts + delay, len(events), ev))
    events.sort(key=lambda e: (e[0], e[1]))
    lines = [json.dumps({k: ev[k] for k in FIELDS}, separators=(",", ":"), ensure_ascii=True)
             for _, _, ev in events]
    return ("\n".join(lines) + "\n").encode("ascii")


# -- reading it back: what a stream processor sees ----------------------------------------------------------
def parse_ms(iso_time: str) -> int:
    t = _dt.datetime.strptime(iso_time, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=_dt.timezone.utc)
    return int((t - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)).total_seconds() * 1000 + 0.5)


def disorder(events) -> tuple:
    """File positions (0-based) of out-of-order and of late events: an event is *out of order* when its event
    time is earlier than the largest event time of any line before it, and *late* when it is more than
    ``LATE_THRESHOLD_MS`` earlier. Late events are counted in both lists."""
    max_seen = -1
    ooo, late = [], []
    for i, ev in enumerate(events):
        ms = parse_ms(ev["event_time"])
        if ms < max_seen:
            ooo.append(i)
            if max_seen - ms > LATE_THRESHOLD_MS:
                late.append(i)
        max_seen = max(max_seen, ms)
    return ooo, late


def stats(data: bytes) -> dict:
    events = [json.loads(line) for line in data.splitlines()]
    ooo, late = disorder(events)
    by_type = Counter(e["event_type"] for e in events)
    sessions = {e["session_id"] for e in events}
    funnel = {t: len({e["session_id"] for e in events if e["event_type"] == t}) for t in EVENT_TYPES}
    revenue = sum(e["price"] * e["quantity"] for e in events if e["event_type"] == "purchase")
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(), "events": len(events),
            "by_type": {t: by_type[t] for t in EVENT_TYPES}, "users": len({e["user_id"] for e in events}),
            "sessions": len(sessions), "sessions_with": funnel, "products": len({e["product_id"] for e in events
                                                                                  if e["product_id"]}),
            "revenue": round(revenue, 2), "first_event_time": min(e["event_time"] for e in events),
            "last_event_time": max(e["event_time"] for e in events), "out_of_order": len(ooo), "late": len(late),
            "late_lines": [i + 1 for i in late]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Generate the clickstream dataset (data/clickstream/events.jsonl).")
    ap.add_argument("--seed", type=int, default=SEED, help=f"random seed (default {SEED}, the committed file's)")
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="where to write (default: events.jsonl next to this)")
    ap.add_argument("--check", action="store_true",
                    help="regenerate in memory and compare with --out; exit 1 if they differ")
    ap.add_argument("--stats", action="store_true", help="print counts by type, sizes, out-of-order and late events")
    args = ap.parse_args(argv)
    out = Path(args.out)
    data = generate(args.seed)
    if args.check:
        try:
            on_disk = out.read_bytes()
        except FileNotFoundError:
            print(f"{out}: missing", file=sys.stderr)
            return 1
        if on_disk != data:
            a, b = on_disk.splitlines(), data.splitlines()
            first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            print(f"{out}: differs from seed {args.seed}'s output ({len(on_disk)} vs {len(data)} bytes, "
                  f"{len(a)} vs {len(b)} lines, first difference at line {first + 1})", file=sys.stderr)
            return 1
        print(f"{out}: OK, identical to seed {args.seed}'s output ({len(data)} bytes, "
              f"sha256 {hashlib.sha256(data).hexdigest()[:16]})")
        return 0
    if args.stats:
        for k, v in stats(data).items():
            print(f"{k:>17}: {json.dumps(v)}")
        return 0
    out.write_bytes(data)
    print(f"wrote {out} ({len(data)} bytes, {len(data.splitlines())} events)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
