//! The OpenAPI 3.1 document, built from the catalogue (spec part 9).

pub async fn legacy_page() -> &'static str {
    "todo"
}

pub async fn serve() -> &'static str {
    "todo"
}
