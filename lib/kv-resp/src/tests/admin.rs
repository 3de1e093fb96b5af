//! `CONFIG GET` patterns, `CONFIG SET` of each kind of parameter, `FUNCTION FLUSH`.

use super::T;

/// A `CONFIG GET` reply of these name-value pairs.
fn pairs(kv: &[(&str, &str)]) -> String {
    let mut s = format!("*{}\r\n", 2 * kv.len());
    for (k, v) in kv {
        s += &format!("${}\r\n{k}\r\n${}\r\n{v}\r\n", k.len(), v.len());
    }
    s
}

#[test]
fn config_get_matches_glob_patterns_without_case() {
    let mut t = T::sized(5000, 10);
    assert_eq!(
        t.c(&["CONFIG", "GET", "maxmemory*"]),
        pairs(&[("maxmemory", "5000"), ("maxmemory-policy", "noeviction")])
    );
    assert_eq!(
        t.c(&["CONFIG", "GET", "LIST-*"]),
        pairs(&[
            ("list-max-listpack-size", "-2"),
            ("list-compress-depth", "0")
        ])
    );
    // A pattern that names an alias answers under the alias; each parameter answers once.
    assert_eq!(
        t.c(&["CONFIG", "GET", "list-max-ziplist-size", "list-max-*-size"]),
        pairs(&[("list-max-ziplist-size", "-2")])
    );
    assert_eq!(t.c(&["CONFIG", "GET", "no-such-*"]), "*0\r\n");
    let long = "x".repeat(200);
    assert_eq!(t.c(&["CONFIG", "GET", &long]), "*0\r\n");
}

#[test]
fn config_set_tunables_and_flags_read_back() {
    let mut t = T::new();
    assert_eq!(
        t.c(&[
            "CONFIG",
            "SET",
            "list-max-ziplist-size",
            "5",
            "set-max-intset-entries",
            "2"
        ]),
        "+OK\r\n"
    );
    assert_eq!(
        t.c(&["CONFIG", "GET", "list-max-listpack-size"]),
        pairs(&[("list-max-listpack-size", "5")])
    );
    assert_eq!(
        t.c(&["CONFIG", "GET", "set-max-intset-entries"]),
        pairs(&[("set-max-intset-entries", "2")])
    );
    assert_eq!(
        t.c(&["CONFIG", "SET", "lazyfree-lazy-user-del", "YES"]),
        "+OK\r\n"
    );
    assert_eq!(
        t.c(&["CONFIG", "GET", "lazyfree-lazy-user-del"]),
        pairs(&[("lazyfree-lazy-user-del", "yes")])
    );
}

#[test]
fn config_set_applies_all_pairs_or_none() {
    let mut t = T::new();
    assert_eq!(
        t.c(&[
            "CONFIG",
            "SET",
            "hash-max-listpack-entries",
            "7",
            "list-compress-depth",
            "x"
        ]),
        "-ERR CONFIG SET failed (possibly related to argument 'list-compress-depth') - \
         argument couldn't be parsed into an integer\r\n"
    );
    assert_eq!(
        t.c(&["CONFIG", "GET", "hash-max-listpack-entries"]),
        pairs(&[("hash-max-listpack-entries", "128")])
    );
    assert_eq!(
        t.c(&["CONFIG", "SET", "list-compress-depth", "-1"]),
        "-ERR CONFIG SET failed (possibly related to argument 'list-compress-depth') - \
         argument must be in range\r\n"
    );
    assert_eq!(
        t.c(&["CONFIG", "SET", "lazyfree-lazy-user-del", "maybe"]),
        "-ERR CONFIG SET failed (possibly related to argument 'lazyfree-lazy-user-del') - \
         argument must be 'yes' or 'no'\r\n"
    );
    assert_eq!(
        t.c(&["CONFIG", "SET", "no-such\r\nthing", "1"]),
        "-ERR Unknown option or number of arguments for CONFIG SET - 'no-such  thing'\r\n"
    );
    assert_eq!(
        t.c(&["CONFIG", "SET", "save"]),
        "-ERR wrong number of arguments for 'config|set' command\r\n"
    );
}

#[test]
fn config_set_of_a_fixed_parameter_takes_only_its_value() {
    let mut t = T::sized(5000, 10);
    assert_eq!(t.c(&["CONFIG", "SET", "save", ""]), "+OK\r\n");
    assert_eq!(t.c(&["CONFIG", "SET", "maxmemory", "5000"]), "+OK\r\n");
    assert_eq!(
        t.c(&["CONFIG", "SET", "maxmemory", "0"]),
        "-ERR CONFIG SET failed (possibly related to argument 'maxmemory') - \
         this server's value is fixed\r\n"
    );
    assert_eq!(
        t.c(&["CONFIG", "SET", "appendonly", "yes"]),
        "-ERR CONFIG SET failed (possibly related to argument 'appendonly') - \
         this server's value is fixed\r\n"
    );
    assert_eq!(t.c(&["CONFIG", "RESETSTAT"]), "+OK\r\n");
}

#[test]
fn function_flush_and_other_function_subcommands() {
    let mut t = T::new();
    assert_eq!(t.c(&["FUNCTION", "FLUSH"]), "+OK\r\n");
    assert_eq!(t.c(&["function", "flush", "async"]), "+OK\r\n");
    assert_eq!(
        t.c(&["FUNCTION", "FLUSH", "later"]),
        "-ERR FUNCTION FLUSH only supports SYNC|ASYNC option\r\n"
    );
    assert_eq!(
        t.c(&["FUNCTION", "LOAD", "x"]),
        "-ERR unknown subcommand 'LOAD'. Try FUNCTION HELP.\r\n"
    );
    assert_eq!(
        t.c(&["FUNCTION"]),
        "-ERR wrong number of arguments for 'function' command\r\n"
    );
}
