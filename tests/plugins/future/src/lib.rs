//! An identity source built against `postern:plugin@9.0.0`, a version no
//! host serves: the checker and the loader must refuse it with the list of
//! the versions they serve.

wit_bindgen::generate!({
    inline: r#"
        package postern:plugin@9.0.0;

        interface source {
            authenticate: func(login: string, password: string) -> bool;
        }

        world identity-source {
            export source;
        }
    "#,
    world: "identity-source",
});

struct Future;

impl exports::postern::plugin::source::Guest for Future {
    fn authenticate(_login: String, _password: String) -> bool {
        false
    }
}

export!(Future);
