//! The browser entry point: install the panic panel, then mount the planner on <body>.

fn main() {
    meshplan_web::start();
}
