# vere_build — contrib/vere/vheap-hooks.patch applies to Vere v4.5 and its
# pkg/noun compiles with gcc (tests/vere/build-check.sh). Skipped unless
# VERE_SRC names a vere-v4.5 checkout (and VERE_DEPS its dependencies):
# CI has no network to fetch them.
. "$TOP/tests/lib.sh"
exec sh "$TOP/tests/vere/build-check.sh"
