//! The worker's entry point: installs the message handler (see the library's docs for the protocol).

fn main() {
    meshplan_search_worker::start();
}
