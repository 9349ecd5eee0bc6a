# top_live — `top --live` on a running program (live_view), in a terminal
# under tmux (send-keys, capture-pane) and as plain text: the first screen
# ranks cache_fill first with the 1,000,000 B the program holds; after the
# program grew by 50 x 4,000 B, key 'g' ranks grow_step first with a growth
# of exactly 200,000 B; as the program frees cache_fill's blocks, 3 then
# 4 more, each later look shows what it holds then (700,000 B in 7 blocks,
# 300,000 B in 3: the view reads only what was added since the last look,
# so these check that its kept state follows the program); 'q' quits with
# status 0. Plain text when stdout is
# not a terminal, stopping after --iterations, or by itself with status 0
# when the program exits while watched (its last look says so); a sampled
# run's view says its numbers are estimates, and on screen says the
# program exited when it does, until 'q'. Refused with exit 1 and a
# reason: a dead pid, a process without vheap, the capture of a program
# that has exited, a file that is not a capture.
. "$TOP/tests/lib.sh"
need_cmd tmux
need "$ANALYZE" "$VHEAP_LIB" "$PROGS/live_view"

start_prog() {  # OUT-CAPTURE [ENV...]: starts live_view, sets $pid
    rm -f go prog.out; mkfifo go   # (an old prog.out's "ready" is not this run's)
    env "$@" VHEAP_OUT="$PWD/$cap" VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" "$PROGS/live_view" go >prog.out &
    pid=$!
    poll $pid said '^ready' || die "live_view did not start"
}
said() { grep -qs "$1" prog.out; }    # said PATTERN: live_view printed it
sock="$PWD/tmux.sock"
tm_target=view                     # the session screen_has reads
tm() { tmux -S "$sock" "$@"; }
cleanup() { tm kill-server 2>/dev/null; kill -KILL $pid 2>/dev/null; }
trap cleanup EXIT
# pane_has PATTERN: the pane's text (in pane.txt) has it
pane_has() { tm capture-pane -p -t "$tm_target" >pane.txt 2>/dev/null; grep -q "$1" pane.txt; }
# screen_has PATTERN: the pane, polled until it has PATTERN
screen_has() { poll 0 pane_has "$1" || die "the view never showed '$1'; it shows: $(cat pane.txt)"; }
# first_row: the first stack row under the column titles
first_row() { sed -n '/rate\/s *stack/{n;p;q}' pane.txt; }

cap=run.vhcap
start_prog
tm new-session -d -s view -x 200 -y 40 \
    "'$ANALYZE' top --live $pid; echo VIEW-EXIT=\$?; sleep 60"
screen_has 'ranked by live'
row=$(first_row)
case $row in *cache_fill*) ;; *) die "first row by live is not cache_fill: $row" ;; esac
expect_eq "cache_fill's live bytes" "$(echo "$row" | awk '{print $1}')" "1.00M"
expect_eq "cache_fill's blocks" "$(echo "$row" | awk '{print $2}')" 10

echo go >go
poll $pid said '^grown' || die "live_view did not grow"
tm send-keys -t view g
# a look after the whole growth: grow_step's 200 K first (a look taken
# while it grew shows less, and a look before it none)
grown_first() { pane_has 'ranked by growth' && first_row | grep -q '200.00K.*grow_step'; }
poll 0 grown_first
row=$(first_row)
case $row in *grow_step*) ;; *) die "first row by growth is not grow_step: $row" ;; esac
expect_eq "grow_step's growth" "$(echo "$row" | awk '{print $3}')" "200.00K"
expect_eq "grow_step's live bytes" "$(echo "$row" | awk '{print $1}')" "200.00K"
# several looks later, after frees of blocks the first look saw allocated
tm send-keys -t view l
screen_has 'ranked by live'
for step in "3 7 700.00K" "4 3 300.00K"; do
    set -- $step
    echo "free $1" >go
    poll $pid said "^freed $2\$" || die "live_view did not free down to $2 blocks"
    cache_row() { pane_has . ; row=$(grep 'cache_fill' pane.txt | head -1)
                  [ "$(echo "$row" | awk '{print $1, $2}')" = "$3 $2" ]; }
    poll 0 cache_row "$@"
    expect_eq "cache_fill after free $1" "$(echo "$row" | awk '{print $1, $2}')" "$3 $2"
done
tm send-keys -t view q
screen_has 'VIEW-EXIT=0'

# plain text: not a terminal
"$ANALYZE" top --live --iterations 2 --interval 0.2 $pid >plain.txt 2>plain.err ||
    die "plain view: exit $? ($(cat plain.err))"
expect_eq "plain looks" "$(grep -c '^--- look' plain.txt)" 2
grep -q 'cache_fill' plain.txt || die "plain view has no cache_fill: $(cat plain.txt)"
grep -q '\[' plain.txt && grep -q "$(printf '\033')" plain.txt && die "escape sequences in plain text"

# watched as it exits: the view's last look says so, and it stops
"$ANALYZE" top --live --interval 0.2 $pid >watch.txt 2>watch.err & view=$!
poll $view grep -qs '^--- look 2' watch.txt || die "the view did not look twice: $(cat watch.err)"
echo exit >go
wait $pid || die "live_view exited $?"
view_gone() { ! kill -0 $view 2>/dev/null; }
poll 0 view_gone
kill -0 $view 2>/dev/null && { kill $view; die "the view went on after the program exited"; }
wait $view || die "the view of a program that exited: exit $? ($(cat watch.err))"
last=$(awk '/^--- look/ { l = "" } { l = l $0 "\n" } END { printf "%s", l }' watch.txt)
case $last in *"the program has exited"*) ;; *) die "the last look does not say the program exited: $last" ;; esac
case $last in *cache_fill*) ;; *) die "the last look lost cache_fill: $last" ;; esac
"$ANALYZE" top --live $cap >dead.txt 2>dead.err && die "a live view of an exited program's capture succeeded"
expect_eq "an exited program's capture: exit" $? 1
grep -q "its program has exited" dead.err || die "exited program: said $(cat dead.err)"
"$ANALYZE" top --live $pid >dead.txt 2>dead.err && die "a live view of a dead pid succeeded"
[ $? -eq 1 ] && grep -q "no process $pid" dead.err || die "dead pid: exit/said $(cat dead.err)"
sleep 30 & other=$!
"$ANALYZE" top --live $other >plain2.txt 2>other.err && die "a live view of a process without vheap succeeded"
rc=$?
kill $other
expect_eq "a process without vheap: exit" $rc 1
grep -q "not a live vheap process" other.err || die "non-vheap process: said $(cat other.err)"
echo "not a capture" >notcap.txt
for f in notcap.txt "$ANALYZE"; do
    "$ANALYZE" top --live "$f" >/dev/null 2>notcap.err && die "a live view of $f succeeded"
    [ $? -eq 1 ] || die "$f: exit status is not 1"
    grep -q "not a vheap capture" notcap.err || die "$f: said $(cat notcap.err)"
done

# sampled: estimates, said
cap=sampled.vhcap
start_prog VHEAP_SAMPLE=64KiB
"$ANALYZE" top --live --iterations 1 $pid >sampled.txt 2>sampled.err || die "sampled view: $(cat sampled.err)"
grep -q "every number is an estimate" sampled.txt || die "the sampled view does not say estimates: $(cat sampled.txt)"
tm new-session -d -s view2 -x 200 -y 40 \
    "'$ANALYZE' top --live $pid; echo VIEW-EXIT=\$?; sleep 60"
tm_target=view2
screen_has 'ranked by live'        # watching before the program goes on
echo go >go                        # its two waits: after ready, after grown
poll $pid said '^grown' || die "live_view (sampled) did not grow"
echo exit >go                      # (not before: one read could take both lines)
wait $pid
screen_has 'the program has exited'
tm send-keys -t view2 q
screen_has 'VIEW-EXIT=0'
echo "top_live: screen under tmux (live, growth, quit), plain text, refusals, sampled"
