-- vheap.sql — the schema of a loaded vheap capture (schema version 9).
--
-- A public interface: `vheap-analyze` queries it and so may users, with the
-- sqlite3 CLI. Documented column by column in docs/schema.md. Sizes are
-- bytes, times are nanoseconds since the process started, addresses are
-- integers (SQLite stores them as signed 64-bit; addresses above 2^63 do not
-- occur on x86_64 user space). One database holds one capture (one process).
-- Changing anything here bumps meta.schema_version and docs/schema.md.

PRAGMA foreign_keys = OFF;

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value
);
-- keys (docs/schema.md says more): schema_version, vheap_version,
-- capture_path (absolute), capture_size, capture_mtime_ns, capture_chunks,
-- capture_last_time, capture_flags (what decides whether the DB is up to
-- date with its capture), coarse_clock_ns and precise_from (the header's
-- record-time resolution while one thread recorded), loaded_at (UTC, ISO 8601), load_seconds, records,
-- damage (first message or NULL), damage_count, bucket_ns (width of series
-- buckets), growth_start_time and growth_end_time (the growth view's
-- start_time and end_time), symbols ('resolved', 'skipped' or why not), and counts of
-- oddities in the capture: implicit_frees, unknown_moves, unknown_records,
-- implicit_heaps, bad_heap_records, heap_reuses, missing_stacks, reordered
-- (records moved ahead to settle a cross-thread misorder); the event
-- stream's events, event_blocks, event_bytes, checkpoints,
-- checkpoint_bytes, checkpoint_events. The symbolizer adds symbols_* counts.

CREATE TABLE processes (
    id               INTEGER PRIMARY KEY,
    pid              INTEGER NOT NULL,
    ppid             INTEGER NOT NULL,
    exe              TEXT,
    argv             TEXT,          -- JSON array of strings
    start_realtime_ns INTEGER,      -- wall clock at start (ns since epoch)
    runtime_ns       INTEGER,       -- time of the last record (the END
                                    -- record, on a clean exit)
    ended            INTEGER,       -- 1: clean exit (END record); 0: killed,
                                    -- crashed, exec'd, or still running
    forked           INTEGER,       -- 1: a fork child
    exec_generation  INTEGER,
    page_size        INTEGER,
    phys_pages       INTEGER,
    max_depth        INTEGER,
    unwind           TEXT,          -- 'libunwind' | 'fp'
    dropped_events   INTEGER,       -- not recorded: recording disabled
    nested_events    INTEGER,       -- not recorded: inside the shim (signal)
    stack_table_full INTEGER,       -- recorded without a stack
    peak_rss         INTEGER,       -- bytes, largest RSS sample
    peak_rss_time    INTEGER,
    sample_rate      INTEGER NOT NULL DEFAULT 0  -- 0: every call recorded;
                                    -- else VHEAP_SAMPLE (mean bytes between
                                    -- samples): heaps, stack_stats, series,
                                    -- threads and growth hold estimates
);

-- When recording was on: one row from 0 to runtime_ns unless the program
-- started paused or was paused (VHEAP_START=paused, vheap-analyze ctl).
-- Nothing outside these windows was recorded.
CREATE TABLE windows (
    start_time INTEGER NOT NULL,
    end_time   INTEGER NOT NULL     -- runtime_ns if still recording at the end
);

CREATE TABLE threads (
    tid          INTEGER PRIMARY KEY,
    first_time   INTEGER,
    last_time    INTEGER,
    allocations  INTEGER,
    frees        INTEGER,
    exited       INTEGER            -- 1 if a THREAD_EXIT record was seen
);

CREATE TABLE modules (
    id          INTEGER PRIMARY KEY,
    path        TEXT,
    build_id    TEXT,               -- lowercase hex, NULL if none
    bias        INTEGER NOT NULL,   -- load bias: address = ELF vaddr + bias
    lo          INTEGER NOT NULL,   -- mapped address range [lo, hi)
    hi          INTEGER NOT NULL,
    load_time   INTEGER,
    unload_time INTEGER,            -- NULL: still loaded at the end
    is_main     INTEGER NOT NULL DEFAULT 0
);

-- One row per distinct return address (per module load). function/file/line
-- describe the innermost function at the address — possibly an inlined one;
-- its inlined callers within the same physical frame are in frame_inlines.
CREATE TABLE frames (
    id           INTEGER PRIMARY KEY,
    address      INTEGER NOT NULL,
    module_id    INTEGER REFERENCES modules(id),  -- NULL: no module maps it
    module_offset INTEGER,          -- ELF virtual address inside the module
    function     TEXT,              -- demangled; NULL if unresolved
    file         TEXT,
    line         INTEGER,
    inline_depth INTEGER NOT NULL DEFAULT 0       -- rows in frame_inlines
);
CREATE INDEX frames_function ON frames(function);

CREATE TABLE frame_inlines (
    frame_id  INTEGER NOT NULL REFERENCES frames(id),
    depth     INTEGER NOT NULL,     -- 1 = caller of frames.function, ...;
                                    -- the deepest is the out-of-line function
    function  TEXT,
    file      TEXT,
    line      INTEGER,
    PRIMARY KEY (frame_id, depth)
) WITHOUT ROWID;

-- Stacks as a tree of call-tree nodes: a node is one frame under its
-- caller's node, shared by every stack that passes through it, so storage
-- grows with the distinct call tree, not with stacks x depth. A stack names
-- its innermost node; its frames are that node's frame, its parent's, and so
-- on up to an outermost node (parent 0). Read the tree through the
-- stack_nodes view and a stack's frames in order through stack_frames
-- (below). The table stores each node's distance to its parent, `up` = id -
-- parent: 1 for most nodes, which SQLite stores in no bytes at all, where a
-- parent id takes three (schema version 4 stored `parent`: 15 bytes a node
-- instead of 12).
CREATE TABLE stack_tree (
    id        INTEGER PRIMARY KEY,  -- 1, 2, ...
    up        INTEGER NOT NULL CHECK (up > 0),  -- id - parent (parent < id);
                                    -- up = id for an outermost frame
    frame_id  INTEGER NOT NULL REFERENCES frames(id)
);

CREATE TABLE stacks (
    id        INTEGER PRIMARY KEY,  -- 0 is the empty/unknown stack
    depth     INTEGER NOT NULL,
    truncated INTEGER NOT NULL DEFAULT 0,
    node      INTEGER NOT NULL DEFAULT 0  -- innermost frame's stack_nodes
                                    -- row; 0: no frames
);

-- Heaps: id 0 is the system allocator (malloc family); custom heaps made
-- through preload/vheap.h follow.
CREATE TABLE heaps (
    id            INTEGER PRIMARY KEY,
    name          TEXT NOT NULL,
    parent_id     INTEGER,          -- enclosing heap, NULL for none
    base          INTEGER,          -- bounds, NULL when unknown
    size          INTEGER,
    create_time   INTEGER,
    destroy_time  INTEGER,          -- NULL: still exists at the end
    allocations   INTEGER NOT NULL DEFAULT 0,  -- successful allocation calls
                                    -- (a realloc counts as one)
    failed        INTEGER NOT NULL DEFAULT 0,  -- calls that returned NULL
    frees         INTEGER NOT NULL DEFAULT 0,  -- free calls of live blocks
                                    -- (not a realloc's free half)
    temporary     INTEGER NOT NULL DEFAULT 0,  -- heaptrack's, per thread
    bytes_allocated INTEGER NOT NULL DEFAULT 0,
    peak_bytes    INTEGER NOT NULL DEFAULT 0,  -- largest live requested bytes
    peak_blocks   INTEGER NOT NULL DEFAULT 0,
    peak_time     INTEGER,
    live_bytes    INTEGER NOT NULL DEFAULT 0,  -- at the end
    live_blocks   INTEGER NOT NULL DEFAULT 0,
    leaked_bytes  INTEGER NOT NULL DEFAULT 0,  -- live at the end in a heap that
    leaked_blocks INTEGER NOT NULL DEFAULT 0,  -- still exists at the end
    unknown_frees INTEGER NOT NULL DEFAULT 0,  -- frees (and in-place reallocs)
                                    -- of addresses not live
    -- An outermost custom heap (no parent) with the heaps nested in it
    -- (Vere's loom and its roads): the most usable bytes live in all of
    -- them at once, when, and the heap whose allocation reached it.
    -- size - tree_peak_bytes is the least headroom. NULL for the others.
    tree_peak_bytes   INTEGER,
    tree_peak_time    INTEGER,
    tree_peak_heap_id INTEGER
);

CREATE TABLE tags (
    id     INTEGER PRIMARY KEY,     -- 0 = no tag
    label  TEXT NOT NULL
);

CREATE TABLE marks (
    time   INTEGER NOT NULL,
    tid    INTEGER,
    label  TEXT NOT NULL
);

-- Parts of a custom heap's bounds that hold no blocks (vheap_region): the
-- allocator's metadata ('meta') or not heap at all ('unused': a stack, a
-- reserved gap). One row per declaration, from its start until it was
-- replaced, ended, or its heap destroyed (end_time NULL: still there).
CREATE TABLE regions (
    heap_id     INTEGER NOT NULL,
    region      INTEGER NOT NULL,   -- the program's number for it
    kind        TEXT NOT NULL,      -- 'meta' | 'unused'
    base        INTEGER NOT NULL,
    size        INTEGER NOT NULL,
    start_time  INTEGER NOT NULL,
    end_time    INTEGER
);

CREATE TABLE rss (
    time   INTEGER NOT NULL,
    bytes  INTEGER NOT NULL
);

-- Per (heap, stack, tag): the totals over the whole run (read them through
-- the stack_stats view) and the fit of its live bytes over time (the growth
-- view; its columns here are NULL where growth has no row). One table for
-- both: schema version 4 had two with the same key, and growth repeated
-- the fit's start and end in every row (now meta's growth_start_time and
-- growth_end_time).
CREATE TABLE stack_totals (
    heap_id         INTEGER NOT NULL,
    stack_id        INTEGER NOT NULL,
    tag_id          INTEGER NOT NULL DEFAULT 0,
    allocations     INTEGER NOT NULL,  -- successful calls
    failed          INTEGER NOT NULL,
    bytes_allocated INTEGER NOT NULL,  -- sum of requested sizes
    usable_allocated INTEGER NOT NULL, -- sum of usable sizes
    frees           INTEGER NOT NULL,  -- of blocks allocated here
    temporary       INTEGER NOT NULL,  -- of blocks allocated here
    peak_blocks     INTEGER NOT NULL,  -- live at the heap's peak
    peak_bytes      INTEGER NOT NULL,
    max_live_bytes  INTEGER NOT NULL,  -- this stack's own largest live bytes
    leaked_blocks   INTEGER NOT NULL,
    leaked_bytes    INTEGER NOT NULL,  -- also growth.live_bytes
    first_time      INTEGER,           -- growth's columns: NULL, all four,
    mean_bytes      INTEGER,           -- when growth has no row
    bytes_per_hour  REAL,
    r2              REAL,
    CHECK ((first_time IS NULL) = (mean_bytes IS NULL) AND
           (first_time IS NULL) = (bytes_per_hour IS NULL) AND
           (first_time IS NULL) = (r2 IS NULL)),
    PRIMARY KEY (heap_id, stack_id, tag_id)
) WITHOUT ROWID;

-- Blocks live at the end of the capture (in heaps that still exist).
-- Keyed by (heap, stack, address) so that grouping by stack needs no index
-- (the loader writes the rows in key order, which is also the fastest).
CREATE TABLE leaks (
    heap_id   INTEGER NOT NULL,
    address   INTEGER NOT NULL,
    size      INTEGER NOT NULL,     -- requested
    usable    INTEGER NOT NULL,
    stack_id  INTEGER NOT NULL,
    tag_id    INTEGER NOT NULL DEFAULT 0,
    tid       INTEGER,
    time      INTEGER NOT NULL,     -- when it was allocated
    class     INTEGER,              -- reachability at exit (table reach):
                                    -- 0 still reachable, 1 possibly lost,
                                    -- 2 indirectly lost, 3 definitely lost;
                                    -- NULL not classified
    PRIMARY KEY (heap_id, stack_id, address)
) WITHOUT ROWID;

-- The reachability scans (preload/reach.c): the one at exit (scan 0, a row
-- if the capture has it) and those asked for while the program ran
-- (`vheap-analyze ctl reach`: scan 1, 2, ... in order, their blocks in
-- reach_blocks): how each ended and what it read and skipped.
CREATE TABLE reach (
    status            TEXT NOT NULL,    -- 'done', 'timeout', 'failed'
    blocks            INTEGER NOT NULL, -- live system-heap blocks it knew
    root_bytes        INTEGER NOT NULL, -- bytes of roots read
    heap_bytes        INTEGER NOT NULL, -- bytes of blocks read
    unreadable_bytes  INTEGER NOT NULL, -- skipped: unreadable
    nonresident_bytes INTEGER NOT NULL, -- skipped: not resident (mincore)
    scan_ns           INTEGER NOT NULL, -- the scan's time (wall)
    cpu_ns            INTEGER NOT NULL, -- the scan's CPU time
    threads           INTEGER NOT NULL, -- other threads at exit
    threads_unseen    INTEGER NOT NULL, -- of those, stack pointer unknown
    misaligned        INTEGER NOT NULL, -- blocks left unclassified
    scan              INTEGER NOT NULL DEFAULT 0, -- 0 at exit, 1.. on request
    time              INTEGER           -- when its snapshot was taken
);

-- Names of leaks.class.
CREATE VIEW leak_classes(class, name) AS
VALUES (0, 'reachable'), (1, 'possible'), (2, 'indirect'), (3, 'lost');

-- Time series in buckets of meta.bucket_ns: activity within the bucket and
-- the state at its end. Only buckets with activity in that heap have a row:
-- a missing bucket has the live_bytes of the row before it. Re-bucket with
-- GROUP BY bucket / k (sum the activity, take the last live_bytes and the
-- max of max_live_bytes). Per heap, sum(bytes_allocated) - sum(bytes_freed)
-- up to a bucket is its live_bytes.
CREATE TABLE series (
    heap_id         INTEGER NOT NULL,
    bucket          INTEGER NOT NULL,  -- time / bucket_ns
    allocations     INTEGER NOT NULL,
    frees           INTEGER NOT NULL,
    temporary       INTEGER NOT NULL,
    bytes_allocated INTEGER NOT NULL,
    bytes_freed     INTEGER NOT NULL,  -- every byte that stopped being live
    live_bytes      INTEGER NOT NULL,  -- at the end of the bucket
    live_blocks     INTEGER NOT NULL,
    max_live_bytes  INTEGER NOT NULL,  -- highest within the bucket
    PRIMARY KEY (heap_id, bucket)
) WITHOUT ROWID;

-- The normalized event stream (analyze/store/events.h; read it through evstream
-- and liveset__at, the blobs are not meant for SQL): every allocation, free,
-- in-place resize, move and failed call in time order, numbered from 0
-- (seq), in blocks of at most 65536 events. `data` holds zstd frames of
-- varint-coded events (encoding 1, 2 or 3: docs/schema.md). Times never go back:
-- block b's events lie in [first_time, last_time], before block b + 1's.
CREATE TABLE events (
    block      INTEGER PRIMARY KEY,  -- 0, 1, ... in stream order
    first_seq  INTEGER NOT NULL,     -- seq of its first event
    first_time INTEGER NOT NULL,
    last_time  INTEGER NOT NULL,
    count      INTEGER NOT NULL,     -- events in it
    encoding   INTEGER NOT NULL,     -- 1, 2 or 3 (load writes 3)
    data       BLOB NOT NULL
);
CREATE INDEX events_time ON events(first_time);
CREATE INDEX events_seq ON events(first_seq);

-- Live-set checkpoints: every block live after events [0, seq), so that the
-- live set at any time is one checkpoint plus the events after it. Taken
-- after max(1M, 2 x min(live blocks now, at the previous one)) events, at
-- the start of an event block, and at the end. One row per heap with live
-- blocks (parts of at most 65536 blocks, ascending addresses); a checkpoint
-- with nothing live has one empty row for heap 0. `data`: zstd frame,
-- encoding 1 (docs/schema.md).
CREATE TABLE checkpoints (
    seq      INTEGER NOT NULL,       -- the state after this many events
    heap_id  INTEGER NOT NULL,
    part     INTEGER NOT NULL,       -- 0, 1, ... within (seq, heap_id)
    time     INTEGER NOT NULL,       -- time of event seq - 1 (0 if seq = 0)
    count    INTEGER NOT NULL,       -- blocks in data
    encoding INTEGER NOT NULL,       -- 1
    data     BLOB NOT NULL,
    PRIMARY KEY (seq, heap_id, part)
);
CREATE INDEX checkpoints_time ON checkpoints(time, seq);

-- ---- Views ---------------------------------------------------------------

-- The call tree: one row per node, `parent` the caller's node (0 for an
-- outermost frame; always parent < id). A table of these columns in schema
-- version 4; `WHERE id = ?` is a primary-key lookup.
CREATE VIEW stack_nodes AS
SELECT id, id - up AS parent, frame_id FROM stack_tree;

-- Per (heap, stack, tag) totals over the whole run (a table of these
-- columns and rows in schema version 4, keyed by heap_id, stack_id, tag_id).
CREATE VIEW stack_stats AS
SELECT heap_id, stack_id, tag_id, allocations, failed, bytes_allocated, usable_allocated,
       frees, temporary, peak_blocks, peak_bytes, max_live_bytes, leaked_blocks, leaked_bytes
FROM stack_totals;

-- Each (heap, stack, tag)'s live bytes over time fitted to a straight line
-- by least squares over every instant (not every event) of one window for
-- all stacks: the recorded time (pauses left out) from the start of
-- recording (start_time: the first window's start) to the end (end_time:
-- the capture's last record), live bytes 0 before the stack's first
-- allocation (first_time); live_bytes at end_time, mean_bytes over the
-- window, bytes_per_hour the line's slope per recorded hour, r2 (0..1) how
-- well the line fits. A leak that grows steadily has a positive slope and
-- r2 near 1; memory allocated once and held is one step (r2 at most 0.75,
-- near 0 when early); churn stays flat (r2 near 0). Estimates in a sampled
-- capture. Destroyed heaps: no rows. A table of these columns and rows in
-- schema version 4.
CREATE VIEW growth AS
SELECT heap_id, stack_id, tag_id,
       (SELECT value FROM meta WHERE key = 'growth_start_time') AS start_time,
       first_time,
       (SELECT value FROM meta WHERE key = 'growth_end_time') AS end_time,
       leaked_bytes AS live_bytes, mean_bytes, bytes_per_hour, r2
FROM stack_totals WHERE first_time IS NOT NULL;

-- A stack's frames in order, one row each: idx 0 = innermost, the
-- allocator's caller (schema version 2 had this as a table). Walks the tree
-- from the stack's node up; `WHERE stack_id = ?` reads only that stack's
-- nodes, but a query over all stacks builds every stack's list. Each step
-- goes to a lower id (as the CHECK says), so the walk ends in any file.
CREATE VIEW stack_frames AS
SELECT s.id AS stack_id, j.key AS idx, j.value AS frame_id
FROM stacks s, json_each((
    WITH RECURSIVE up(id, parent, frame_id, i) AS (
        SELECT id, parent, frame_id, 0 FROM stack_nodes WHERE id = s.node
        UNION ALL
        SELECT n.id, n.parent, n.frame_id, up.i + 1 FROM up
        JOIN stack_nodes n ON n.id = up.parent AND n.id < up.id)
    SELECT '[' || group_concat(frame_id) || ']' FROM (SELECT frame_id FROM up ORDER BY i))) j;

-- A stack as one line of text, innermost first: "f (file:line) <- g ...".
CREATE VIEW stack_text AS
SELECT s.id AS stack_id,
       (WITH RECURSIVE up(id, parent, frame_id, i) AS (
            SELECT id, parent, frame_id, 0 FROM stack_nodes WHERE id = s.node
            UNION ALL
            SELECT n.id, n.parent, n.frame_id, up.i + 1 FROM up
            JOIN stack_nodes n ON n.id = up.parent AND n.id < up.id)
        SELECT group_concat(t, ' <- ') FROM (
            SELECT coalesce(f.function, printf('0x%x', f.address))
                   || coalesce(' (' || f.file || ':' || f.line || ')', '') AS t
            FROM up JOIN frames f ON f.id = up.frame_id ORDER BY up.i)) AS text
FROM stacks s WHERE s.node != 0;

-- The innermost frame of each stack (what heaptrack_print lists first).
CREATE VIEW stack_leaf AS
SELECT s.id AS stack_id, f.function, f.file, f.line, m.path AS module
FROM stacks s
JOIN stack_nodes n ON n.id = s.node
JOIN frames f ON f.id = n.frame_id
LEFT JOIN modules m ON m.id = f.module_id;

CREATE VIEW summary AS
SELECT h.id AS heap_id, h.name AS heap,
       p.runtime_ns, h.allocations, h.failed, h.frees, h.temporary,
       h.bytes_allocated, h.peak_bytes, h.peak_blocks, h.peak_time,
       p.peak_rss, h.leaked_bytes, h.leaked_blocks,
       p.dropped_events, p.nested_events
FROM heaps h, processes p;

CREATE VIEW leaks_by_stack AS
SELECT heap_id, stack_id, count(*) AS blocks, sum(size) AS bytes,
       sum(usable) AS usable
FROM leaks GROUP BY heap_id, stack_id;

-- The system heap's blocks live when a scan on request (reach.scan >= 1)
-- took its snapshot, with their classes: the leaks table's columns at that
-- moment (class NULL: not classified, or the scan did not finish).
CREATE TABLE reach_blocks (
    scan      INTEGER NOT NULL,
    heap_id   INTEGER NOT NULL,
    address   INTEGER NOT NULL,
    size      INTEGER NOT NULL,
    usable    INTEGER NOT NULL,
    stack_id  INTEGER NOT NULL,
    tag_id    INTEGER NOT NULL DEFAULT 0,
    tid       INTEGER,
    time      INTEGER NOT NULL,
    class     INTEGER,
    PRIMARY KEY (scan, heap_id, stack_id, address)
) WITHOUT ROWID;

-- Ownership snapshots (preload/vheap.h: vheap_own_*): an allocator's own
-- marking walk (Vere's `urbit grab`, a GC's mark) named, for each live
-- block it reached, the owner path it reached it from; first owner wins.
-- One row a snapshot, in capture order.
CREATE TABLE owner_snapshots (
    id              INTEGER PRIMARY KEY, -- 1, 2, ... in capture order
    heap_id         INTEGER,             -- the heap walked (and its nested
                                         -- heaps); NULL: never announced
    label           TEXT NOT NULL,       -- the walk's name for it ('grab')
    start_time      INTEGER NOT NULL,
    end_time        INTEGER,             -- NULL: cut short (the program died
                                         -- in the walk): loaded as far as it got
    complete        INTEGER NOT NULL,    -- 1: ended, and nothing lost
    blocks          INTEGER NOT NULL,    -- blocks named that were live
    bytes           INTEGER NOT NULL,    -- their requested bytes
    walk_bytes      INTEGER NOT NULL,    -- what the walk counted (all rows)
    unknown_blocks  INTEGER NOT NULL,    -- named but not live in the heap
    repeated_blocks INTEGER NOT NULL,    -- named again: the first owner kept
    depth_lost      INTEGER NOT NULL,    -- pushes deeper than VHEAP_OWN_DEPTH
    lost_entries    INTEGER NOT NULL     -- written but not in the capture
);

-- The owner tree, merged by path over every snapshot.
CREATE TABLE owners (
    id        INTEGER PRIMARY KEY,
    parent_id INTEGER,                   -- NULL: a top-level owner
    label     TEXT NOT NULL,             -- UTF-8 (bad bytes as U+FFFD)
    path      TEXT NOT NULL,             -- labels from the top, '/' between
    depth     INTEGER NOT NULL           -- 1 at the top
);

-- Every block a snapshot named, once (its first owner), joined with what
-- the capture knows of it at that instant.
CREATE TABLE owned_blocks (
    snapshot_id INTEGER NOT NULL,
    owner_id    INTEGER,                 -- NULL: named before any push
    heap_id     INTEGER,                 -- NULL: not a live block (address
                                         -- 0: bytes the walk counted that
                                         -- are no block, else unknown)
    address     INTEGER NOT NULL,
    size        INTEGER,                 -- requested bytes, as recorded
    usable      INTEGER,
    walk_bytes  INTEGER NOT NULL,        -- what the walk counted for it
    stack_id    INTEGER,                 -- its allocation stack
    tag_id      INTEGER,
    alloc_time  INTEGER                  -- when it was allocated
);

-- Per snapshot and owner: its subtree's totals (blocks, bytes, walk_bytes:
-- what the walk prints for the owner) and its own (self_*: blocks named
-- directly under it). owner_id NULL: blocks named before any push.
CREATE TABLE owner_totals (
    snapshot_id     INTEGER NOT NULL,
    owner_id        INTEGER,
    blocks          INTEGER NOT NULL,
    bytes           INTEGER NOT NULL,
    walk_bytes      INTEGER NOT NULL,
    self_blocks     INTEGER NOT NULL,
    self_bytes      INTEGER NOT NULL,
    self_walk_bytes INTEGER NOT NULL
);

-- One row per event: a mark labelled 'event N ...', 'replay N ...' or
-- 'boot ...' (contrib/vere's patch marks each event as it commits), over
-- the span from the mark before it (of any kind) to its own. Every heap's
-- allocations in the span count; frees count against the event that
-- allocated the block, whenever they come (a heap's destroy frees too).
CREATE TABLE event_spans (
    id              INTEGER PRIMARY KEY,  -- 1, 2, ... in time order
    label           TEXT NOT NULL,        -- the mark's
    start_time      INTEGER NOT NULL,
    end_time        INTEGER NOT NULL,     -- the mark's time
    allocations     INTEGER NOT NULL,
    bytes_allocated INTEGER NOT NULL,     -- requested
    frees           INTEGER NOT NULL,     -- of the blocks it allocated
    bytes_freed     INTEGER NOT NULL,     -- bytes_allocated - bytes_freed:
                                          -- its bytes still live at the end
    lifetime_ns     REAL NOT NULL,        -- of its freed blocks, summed
    home_bytes      INTEGER NOT NULL,     -- outermost custom heaps' own usable
                                          -- bytes at its mark (Vere: the home road)
    home_growth     INTEGER NOT NULL,     -- their change over the span
    in_use_bytes    INTEGER NOT NULL,     -- usable bytes of every tree of
    in_use_peak     INTEGER NOT NULL      -- nested custom heaps at its mark,
                                          -- and the most within the span
);

-- The HTML report's data at its default layout (store/tlayout.h), counted by
-- the loader so that `report` reads rows instead of replaying every event;
-- meta's report_points, report_width (ns) and report_snapshots say the
-- layout, and both tables are empty when the run's end was not the one its
-- header announced (the report replays then). report_timeline: per heap
-- (heap_id -1: every heap) and point of the timeline in which it had an
-- event, its live bytes at the point's end and the most within it.
CREATE TABLE report_timeline (
    heap_id         INTEGER NOT NULL,
    point           INTEGER NOT NULL,
    live_bytes      INTEGER NOT NULL,
    max_live_bytes  INTEGER NOT NULL,
    PRIMARY KEY (heap_id, point)
) WITHOUT ROWID;

-- Per (heap, stack, tag): its cells of the report's call tree, varint pairs
-- (column, value): the bytes and calls allocated in each window between
-- snapshots, in each size class, and its live bytes at each snapshot.
CREATE TABLE report_stacks (
    heap_id         INTEGER NOT NULL,
    stack_id        INTEGER NOT NULL,
    tag_id          INTEGER NOT NULL,
    cells           BLOB NOT NULL,
    PRIMARY KEY (heap_id, stack_id, tag_id)
) WITHOUT ROWID;
