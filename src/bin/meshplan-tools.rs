//! The tools module's entry point (see `meshplan_web::tools`): built by Trunk as `meshplan-tools.js`, loaded by the
//! page after its first render.

fn main() {
    meshplan_web::tools::start();
}
