// Placeholder until the web issue fills in the Leptos app.
fn main() {}
