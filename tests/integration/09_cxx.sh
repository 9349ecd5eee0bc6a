# 09_cxx — C++: new/delete, new[]/delete[], aligned new, std::vector and
# std::string growth and an exception, matched call by call against what the
# program saw (addresses from data(), sizes from capacity()).
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/cxx_user"

profile_checked cxx_user
expect_line out.txt
# std::string's buffers come from libstdc++'s own code and the exception
# object from its runtime: the program's frames are further down those stacks.
[ "$(st evs)" -ge 40 ] || die "only $(st evs) program events"
has_flag "$(st header_flags)" ended || die "capture not ended"
echo "cxx: $(st evs) events match"
