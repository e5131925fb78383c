// Loaded into every test file's process (scripts/run-tests.mjs). A test file reports to the runner's
// parent over its stdout, a pipe that Node writes to asynchronously on Linux; with --test-force-exit the
// file's process exits as soon as its tests are done, and what was still queued for the pipe — the last
// tests' results, even a failure's name and error — never reaches the report (nodejs/node#64833: the run
// then counts fewer tests and still passes). Writes that block until the parent has them lose nothing.
const handle = process.stdout._handle;
if (!process.stdout.isTTY && handle && typeof handle.setBlocking === "function") handle.setBlocking(true);
