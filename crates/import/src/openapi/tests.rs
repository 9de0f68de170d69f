//! Unit tests of the OpenAPI importer.
#![allow(clippy::unwrap_used)]

use super::*;

fn target() -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/openapi/target.yaml"
    ))
    .unwrap()
}

fn yaml(imported: &Imported) -> String {
    crate::write::files(imported, "s.yaml", Some("s.env")).unwrap().scenario
}

#[test]
fn the_target_spec_imports() {
    let imported = import(&target(), "target.yaml", &OpenApiOptions::default()).unwrap();
    let text = yaml(&imported);
    eprintln!("{text}");
}

fn run(text: &str) -> Result<Imported, ImportError> {
    import(text, "spec.yaml", &OpenApiOptions::default())
}

fn ok(text: &str) -> String {
    yaml(&run(text).unwrap())
}

fn err(text: &str) -> String {
    run(text).unwrap_err().to_string()
}

fn requests(imported: &Imported) -> Vec<&Request> {
    imported.flows[0]
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Request(r) => Some(r.as_ref()),
            Step::Think(_) => None,
        })
        .collect()
}

fn json_body(r: &Request) -> &Value {
    match &r.body {
        Some(Body::Json(v)) => v,
        other => panic!("no JSON body: {other:?}"),
    }
}

const HEAD: &str = "openapi: 3.1.0\ninfo: {title: t, version: '1'}\nservers: [{url: 'https://api.example.com/v2/'}]\n";

#[test]
fn refs_are_followed_and_a_dangling_one_is_named_where_it_is() {
    let spec = format!(
        "{HEAD}paths:\n  /a:\n    post:\n      requestBody: {{$ref: '#/components/requestBodies/B'}}\n      responses: {{'200': {{description: x}}}}\ncomponents:\n  requestBodies:\n    B: {{content: {{application/json: {{schema: {{$ref: '#/components/schemas/S'}}}}}}}}\n  schemas:\n    S: {{$ref: '#/components/schemas/T'}}\n    T: {{type: object, required: [n], properties: {{n: {{type: integer, minimum: 5}}}}}}\n"
    );
    let imported = run(&spec).unwrap();
    assert_eq!(json_body(requests(&imported)[0]), &serde_json::json!({"n": 5}));

    let dangling = spec.replace("schemas/T'", "schemas/Nope'");
    let e = err(&dangling);
    assert!(e.contains("#/components/schemas/S"), "{e}");
    assert!(e.contains("`#/components/schemas/Nope` points at nothing"), "{e}");
    assert!(matches!(run(&dangling), Err(ImportError::Spec { .. })));

    let external = spec.replace("'#/components/schemas/T'", "'common.yaml#/T'");
    assert!(err(&external).contains("in another file"), "{}", err(&external));

    // A $ref to a $ref back to the first.
    let cycle = spec
        .replace(
            "T: {type: object",
            "U: {$ref: '#/components/schemas/S'}\n    T: {type: object",
        )
        .replace(
            "S: {$ref: '#/components/schemas/T'}",
            "S: {$ref: '#/components/schemas/U'}",
        );
    let e = err(&cycle);
    assert!(e.contains("leads back to itself"), "{e}");
}

#[test]
fn a_schema_that_contains_itself_is_cut_where_it_repeats() {
    let spec = format!(
        "{HEAD}paths:\n  /tree:\n    post:\n      requestBody: {{content: {{application/json: {{schema: {{$ref: '#/components/schemas/Node'}}}}}}}}\n      responses: {{'201': {{description: x}}}}\ncomponents:\n  schemas:\n    Node:\n      type: object\n      required: [name, child, kids]\n      properties:\n        name: {{type: string}}\n        child: {{$ref: '#/components/schemas/Node'}}\n        kids: {{type: array, items: {{$ref: '#/components/schemas/Node'}}}}\n        wrap: {{allOf: [{{$ref: '#/components/schemas/Node'}}]}}\n"
    );
    let imported = run(&spec).unwrap();
    let body = json_body(requests(&imported)[0]);
    assert_eq!(body["name"], "name");
    assert_eq!(body["child"], Value::Null);
    assert_eq!(body["kids"], serde_json::json!([]));
}

#[test]
fn bodies_are_made_from_schemas() {
    let spec = format!(
        "{HEAD}paths:\n  /orders:\n    post:\n      requestBody:\n        content:\n          application/json:\n            schema:\n              type: object\n              required: [id, at, email, qty, kind, lines, pay, tag, when]\n              properties:\n                id: {{type: string, format: uuid}}\n                at: {{type: string, format: date-time}}\n                email: {{type: string, format: email}}\n                qty: {{type: integer, minimum: 3, maximum: 9}}\n                kind: {{type: string, enum: [big, small]}}\n                lines: {{type: array, items: {{type: object, required: [sku], properties: {{sku: {{type: string, minLength: 5}}}}}}}}\n                pay: {{oneOf: [{{type: 'null'}}, {{type: object, required: [card], properties: {{card: {{type: string, example: '4242'}}}}}}]}}\n                tag: {{allOf: [{{type: object, required: [a], properties: {{a: {{type: boolean}}}}}}, {{type: object, required: [b], properties: {{b: {{type: number, exclusiveMinimum: 0}}}}}}]}}\n                when: {{type: [string, 'null'], format: date}}\n                note: {{type: string, example: 'a ${{b}}'}}\n                server: {{type: string, readOnly: true, example: x}}\n      responses: {{'201': {{description: x}}}}\n"
    );
    let imported = run(&spec).unwrap();
    let body = json_body(requests(&imported)[0]);
    assert_eq!(body["id"], "${uuid}");
    assert_eq!(body["at"], "${now}");
    assert_eq!(body["email"], "user${seq}@example.com");
    assert_eq!(body["qty"], 3);
    assert_eq!(body["kind"], "big");
    assert_eq!(body["lines"], serde_json::json!([{"sku": "skuxx"}]));
    assert_eq!(body["pay"], serde_json::json!({"card": "4242"}));
    assert_eq!(body["tag"], serde_json::json!({"a": true, "b": 0.5}));
    assert_eq!(body["when"], "2026-01-01");
    // An optional field with an example is sent, its text kept literal.
    assert_eq!(body["note"], "a $${b}");
    assert!(body.get("server").is_none(), "{body}");
    assert_eq!(requests(&imported)[0].status, vec![201]);
}

#[test]
fn links_chain_an_operation_to_what_an_earlier_one_returned() {
    let spec = format!(
        "{HEAD}paths:\n  /carts/{{cart}}:\n    get:\n      operationId: getCart\n      parameters: [{{name: cart, in: path, required: true, schema: {{type: string}}}}]\n      responses: {{'200': {{description: x}}}}\n  /carts:\n    post:\n      responses:\n        '201':\n          description: x\n          headers: {{Location: {{schema: {{type: string}}}}}}\n          content: {{application/json: {{schema: {{type: object, properties: {{data: {{type: object}}}}}}}}}}\n          links:\n            Get: {{operationId: getCart, parameters: {{cart: '$response.body#/data/key'}}}}\n"
    );
    let imported = run(&spec).unwrap();
    let reqs = requests(&imported);
    // The producer runs first although the spec lists it second.
    assert_eq!(reqs[0].path.as_deref(), Some("/v2/carts"));
    assert_eq!(reqs[0].extract.get("key"), Some(&Extract::Json("$.data.key".into())));
    assert_eq!(reqs[1].path.as_deref(), Some("/v2/carts/${key}"));
    assert_eq!(reqs[1].name.as_deref(), Some("GET /v2/carts/{cart}"));
    assert_eq!(imported.correlated.len(), 1);
    assert_eq!(imported.correlated[0].from, "$.data.key of POST /carts (step 1)");
    assert_eq!(imported.origin, "https://api.example.com");
}

#[test]
fn names_chain_ids_to_the_resource_that_made_them() {
    let spec = format!(
        "{HEAD}paths:\n  /plans/{{planId}}/runs:\n    post:\n      responses: {{'201': {{description: x, content: {{application/json: {{schema: {{type: object, properties: {{runId: {{type: integer}}}}}}}}}}}}}}\n  /runs/{{id}}:\n    delete:\n      responses: {{'204': {{description: x}}}}\n  /plans:\n    post:\n      responses: {{'201': {{description: x, content: {{application/json: {{example: {{id: 7, name: a}}}}}}}}}}\n  /users/{{id}}:\n    get:\n      responses: {{'200': {{description: x}}}}\n"
    );
    let imported = run(&spec).unwrap();
    let paths: Vec<_> = requests(&imported).iter().map(|r| r.path.clone().unwrap()).collect();
    assert_eq!(
        paths,
        [
            "/v2/plans",
            "/v2/plans/${plan_id}/runs",
            "/v2/users/1",
            "/v2/runs/${run_id}",
        ]
    );
    assert!(
        imported
            .notes
            .iter()
            .any(|n| n.contains("GET /users/{id}: {id} is made up")),
        "{:?}",
        imported.notes
    );
}

#[test]
fn a_token_issuer_runs_first_and_its_token_is_sent() {
    let spec = format!(
        "{HEAD}security: [{{b: []}}]\npaths:\n  /me:\n    get:\n      responses: {{'200': {{description: x}}}}\n  /login:\n    post:\n      security: []\n      requestBody: {{content: {{application/json: {{example: {{user: u, password: hunter2}}}}}}}}\n      responses: {{'200': {{description: x, content: {{application/json: {{schema: {{properties: {{token: {{type: string}}}}}}}}}}}}}}\ncomponents:\n  securitySchemes:\n    b: {{type: http, scheme: bearer}}\n"
    );
    let imported = run(&spec).unwrap();
    let reqs = requests(&imported);
    assert_eq!(reqs[0].path.as_deref(), Some("/v2/login"));
    assert_eq!(reqs[0].extract.get("token"), Some(&Extract::Json("$.token".into())));
    assert_eq!(json_body(reqs[0])["password"], "${env:PASSWORD}");
    assert_eq!(
        reqs[1].headers.get("Authorization").map(String::as_str),
        Some("Bearer ${token}")
    );
    assert_eq!(imported.secrets.iter().next().unwrap().value, "hunter2");

    // Without an issuer, the token is the user's to give.
    let alone = spec
        .replace("  /login:", "  /nologin:")
        .replace("token: {type: string}", "other: {type: string}");
    let imported = run(&alone).unwrap();
    let me = requests(&imported)[0];
    assert_eq!(
        me.headers.get("Authorization").map(String::as_str),
        Some("Bearer ${env:B}")
    );
}

#[test]
fn api_keys_are_read_from_the_environment() {
    let spec = format!(
        "{HEAD}security: [{{k: []}}, {{q: []}}]\npaths:\n  /a:\n    get:\n      responses: {{'200': {{description: x}}}}\ncomponents:\n  securitySchemes:\n    k: {{type: apiKey, in: header, name: X-API-Key}}\n    q: {{type: apiKey, in: query, name: key}}\n"
    );
    let imported = run(&spec).unwrap();
    let r = requests(&imported)[0];
    assert_eq!(r.headers.get("X-API-Key").map(String::as_str), Some("${env:X_API_KEY}"));
    let s = imported.secrets.iter().next().unwrap();
    assert_eq!((s.name.as_str(), s.value.as_str()), ("X_API_KEY", ""));
}

#[test]
fn operations_are_taken_by_id_or_method_and_path_in_the_order_given() {
    let spec = format!(
        "{HEAD}paths:\n  /a:\n    get: {{operationId: getA, responses: {{'200': {{description: x}}}}}}\n    post: {{responses: {{'200': {{description: x}}}}}}\n  /b:\n    get: {{operationId: getB, responses: {{'200': {{description: x}}}}}}\n"
    );
    let options = OpenApiOptions {
        operations: vec!["getB".into(), "post /a".into()],
        server: Some("http://127.0.0.1:9000/base/".into()),
    };
    let imported = import(&spec, "s.yaml", &options).unwrap();
    let paths: Vec<_> = requests(&imported).iter().map(|r| r.path.clone().unwrap()).collect();
    assert_eq!(paths, ["/base/b", "/base/a"]);
    assert_eq!(requests(&imported)[1].method, "POST");
    assert_eq!(imported.origin, "http://127.0.0.1:9000");
    assert_eq!(
        imported.made_from,
        ["OpenAPI 3.1.0 spec s.yaml (t 1): 2 of 3 operations"]
    );

    let options = OpenApiOptions {
        operations: vec!["DELETE /a".into()],
        server: None,
    };
    let e = import(&spec, "s.yaml", &options).unwrap_err().to_string();
    assert!(e.contains("no operation `DELETE /a`"), "{e}");
    let options = OpenApiOptions {
        operations: vec![],
        server: Some("/relative".into()),
    };
    assert!(import(&spec, "s.yaml", &options).is_err());
}

#[test]
fn a_relative_server_is_a_prefix_on_the_default_origin() {
    let spec = "openapi: 3.0.0\ninfo: {title: t, version: '1'}\nservers: [{url: /api/v1}]\npaths:\n  /x:\n    get: {responses: {'200': {description: x}}}\n";
    let imported = run(spec).unwrap();
    assert_eq!(imported.origin, DEFAULT_ORIGIN);
    assert_eq!(requests(&imported)[0].path.as_deref(), Some("/api/v1/x"));
    assert!(imported.notes.iter().any(|n| n.contains("relative")));
}

#[test]
fn parameters_come_from_examples_defaults_and_enums() {
    let spec = format!(
        "{HEAD}paths:\n  /s/{{kind}}:\n    get:\n      parameters:\n        - {{name: kind, in: path, required: true, schema: {{type: string, enum: [a b, c]}}}}\n        - {{name: q, in: query, required: true, examples: {{one: {{value: 'x&y'}}}}}}\n        - {{name: page, in: query, required: true, schema: {{type: integer, minimum: 1, maximum: 9}}}}\n        - {{name: size, in: query, schema: {{type: integer, default: 20}}}}\n        - {{name: skip, in: query, schema: {{type: integer}}}}\n      responses: {{'200': {{description: x}}}}\n"
    );
    let imported = run(&spec).unwrap();
    assert_eq!(
        requests(&imported)[0].path.as_deref(),
        Some("/v2/s/a%20b?q=x%26y&page=${random_int(1, 9)}&size=20")
    );
}

#[test]
fn what_is_not_an_openapi_3_spec_is_refused() {
    let e = err("swagger: '2.0'\ninfo: {title: t}\npaths: {}\n");
    assert!(e.contains("Swagger 2.0"), "{e}");
    assert!(matches!(run("swagger: '2.0'\n"), Err(ImportError::NotThisKind { .. })));
    assert!(err("just: some\nyaml: [1, 2]\n").contains("no `openapi: 3.x` field"));
    assert!(err("openapi: 4.0.0\npaths: {}\n").contains("OpenAPI 4.0.0"));
    assert!(err("{\"openapi\": ").contains("not valid JSON"));
    assert!(err("- a\n- b\n").contains("not a mapping"));
    assert!(err("openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths: {}\n").contains("no operations"));
    assert!(err("openapi: 3.0.0\npaths:\n  /a:\n    get: 3\n").contains("#/paths/~1a/get"));
}

#[test]
fn the_same_spec_gives_the_same_scenario() {
    assert_eq!(ok(&target()), ok(&target()));
}

// Distinct schemas that each hold many of the next grow as a power of their width, which no
// cycle check stops; the import stays quick and bounded.
#[test]
fn wide_nested_schemas_and_many_operations_stay_bounded() {
    let mut spec = format!("{HEAD}paths:\n");
    for i in 0..100 {
        spec.push_str(&format!(
            "  /r{i}:\n    post:\n      requestBody: {{content: {{application/json: {{schema: {{$ref: '#/components/schemas/S0'}}}}}}}}\n      responses: {{'201': {{description: x, content: {{application/json: {{schema: {{$ref: '#/components/schemas/S0'}}}}}}}}}}\n  /r{i}/{{id}}:\n    get: {{responses: {{'200': {{description: x}}}}}}\n"
        ));
    }
    spec.push_str("components:\n  schemas:\n");
    for d in 0..12 {
        let props: Vec<String> = (0..30)
            .map(|p| format!("p{p}: {{$ref: '#/components/schemas/S{}'}}", d + 1))
            .collect();
        let names: Vec<String> = (0..30).map(|p| format!("p{p}")).collect();
        spec.push_str(&format!(
            "    S{d}: {{type: object, required: [{}], properties: {{{}}}, allOf: [{}]}}\n",
            names.join(", "),
            props.join(", "),
            (0..30)
                .map(|_| format!("{{$ref: '#/components/schemas/S{}'}}", d + 1))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    spec.push_str("    S12: {type: string}\n");
    let started = std::time::Instant::now();
    let imported = run(&spec).unwrap();
    assert_eq!(requests(&imported).len(), 200);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

// YAML specs write statuses as bare numbers.
#[test]
fn bare_number_statuses_are_statuses() {
    let spec = format!("{HEAD}paths:\n  /a:\n    post:\n      responses:\n        201:\n          description: x\n        default:\n          description: y\n");
    let imported = run(&spec).unwrap();
    assert_eq!(requests(&imported)[0].status, vec![201]);
}

#[test]
fn header_parameters_keep_defaults_and_hide_secret_examples() {
    let spec = format!(
        "{HEAD}paths:\n  /a:\n    get:\n      parameters:\n        - {{name: X-Mode, in: header, required: true, schema: {{type: string, default: fast}}}}\n        - {{name: X-Session, in: header, required: true, example: s3cret}}\n      responses: {{'200': {{description: x}}}}\n"
    );
    let imported = run(&spec).unwrap();
    let r = requests(&imported)[0];
    assert_eq!(r.headers.get("X-Mode").map(String::as_str), Some("fast"));
    assert_eq!(r.headers.get("X-Session").map(String::as_str), Some("${env:X_SESSION}"));
    assert!(!yaml(&imported).contains("s3cret"));
}

/// A body made up from its schema takes a secret-looking field's example (a password, an API
/// key, on the property rather than on the media type) out to the .env file, as a media type's
/// example is: it was written into the scenario before. A made-up value is taken out too (the
/// user puts the real one in the .env file); a function is not a secret and stays.
#[test]
fn a_schemas_own_examples_of_secrets_go_to_the_env_file() {
    let spec = format!(
        "{HEAD}paths:\n  /auth/token:\n    post:\n      requestBody:\n        content:\n          application/json:\n            schema:\n              type: object\n              required: [username, password, api_key, user]\n              properties:\n                username: {{type: string, example: alice}}\n                password: {{type: string, format: password, example: demo}}\n                api_key: {{type: string, example: sk_live_abcdef123456}}\n                session_id: {{type: string, format: uuid}}\n                user: {{type: object, required: [pass], properties: {{pass: {{type: string}}}}}}\n      responses: {{'200': {{description: x}}}}\n"
    );
    let imported = run(&spec).unwrap();
    let body = json_body(requests(&imported)[0]);
    assert_eq!(body["username"], "alice");
    assert_eq!(body["password"], "${env:PASSWORD}");
    assert_eq!(body["api_key"], "${env:API_KEY}");
    assert_eq!(body["user"]["pass"], "${env:PASS}");
    let text = yaml(&imported);
    assert!(!text.contains("demo") && !text.contains("sk_live"), "{text}");
    let env = imported.secrets.dotenv();
    assert!(
        env.contains("PASSWORD='demo'") && env.contains("API_KEY='sk_live_abcdef123456'"),
        "{env}"
    );
}

/// The YAML parser's errors are said without its own "error:" prefix and without advice about
/// its settings, which are not the user's.
#[test]
fn yaml_errors_are_said_in_crests_words() {
    let e = err("openapi: 3.0.0\nopenapi: 3.0.1\ninfo: {title: t, version: '1'}\npaths: {}\n");
    assert!(
        e.contains("not valid YAML: line 2 column 1: a key given twice: openapi"),
        "{e}"
    );
    assert!(!e.contains("DuplicateKeyPolicy") && !e.contains("error:"), "{e}");
    let e = err("openapi: 3.0.0\npaths:\n  /a: [\n");
    assert!(e.contains("not valid YAML: line") && !e.contains("error:"), "{e}");
}
