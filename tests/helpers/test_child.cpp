// Purpose-built child for process tests (as Boost.Process's tests do): one
// mode per behaviour, so tests do not depend on what /bin holds.
int main() { return 0; }
