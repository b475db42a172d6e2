//! Walks the operator table: every definition is complete and consistent.

use ferromx::opdef::{self, Attrs, Grad, KernelSlot, Meta, ScalarForm};
use ferromx::{Context, DType, NDArray, Shape};
use std::collections::HashSet;

#[test]
fn names_are_unique_and_found() {
    let mut seen = HashSet::new();
    for d in opdef::table() {
        assert!(seen.insert(d.name), "{} is defined twice", d.name);
        assert!(std::ptr::eq(opdef::find(d.name).expect("found"), *d));
    }
    assert!(opdef::table().len() > 150, "{} operators", opdef::table().len());
}

/// Operators allowed to be without an OpCall kernel or inference, each with
/// the reason: only an operator whose output *shape* depends on input values
/// (boolean-mask selection, `unique`, ...) may lack inference, and then must
/// say so here. Empty: every operator in the table has both.
const EXEMPT: &[(&str, &str)] = &[(
    "_backward_image_crop",
    "a backward operator pushed by autograd only: its output is the forward input's shape, which the gradient function supplies; no attribute carries it",
)];

#[test]
fn exemptions_are_real_and_explained() {
    for (name, why) in EXEMPT {
        let d = opdef::find(name).unwrap_or_else(|| panic!("exempt {name} is not in the table"));
        assert!(!why.is_empty(), "{name}: exemption without a reason");
        assert!(d.infer.is_none() || !matches!(d.cpu, KernelSlot::Call(_)), "{name} needs no exemption");
    }
}

#[test]
fn every_definition_is_complete() {
    for d in opdef::table() {
        assert!(!d.doc.is_empty(), "{} has no doc", d.name);
        assert!(!matches!(d.cpu, KernelSlot::Empty), "{} has no CPU kernel", d.name);
        assert!(matches!(d.gpu, KernelSlot::Empty), "{}: no GPU backend exists", d.name);
        if let Grad::None(why) = d.grad {
            assert!(!why.is_empty(), "{} is marked not differentiable without a reason", d.name);
        }
        assert!(!d.outputs.is_empty(), "{} has no outputs", d.name);
        for p in d.params {
            assert!(!p.doc.is_empty(), "{}.{} has no doc", d.name, p.name);
        }
        for &m in d.mutates {
            assert!(m < d.inputs.len(), "{} mutates input {m} it does not have", d.name);
        }
        // Every operator runs an OpCall kernel and infers shapes and dtypes
        // from metadata, unless it is on the documented exemption list.
        if !EXEMPT.iter().any(|(n, _)| *n == d.name) {
            assert!(
                matches!(d.cpu, KernelSlot::Call(_) | KernelSlot::Composite),
                "{} is neither an OpCall kernel nor a composite of table operators",
                d.name
            );
            assert!(d.infer.is_some(), "{} has no shape/dtype inference", d.name);
        }
        if let Some(ScalarForm::Unary(_, None)) = d.scalar {
            assert!(matches!(d.grad, Grad::None(_)), "{}: no derivative but differentiable", d.name);
        }
    }
}

#[test]
fn inference_agrees_with_the_computed_result() {
    let ctx = Context::default();
    for d in opdef::table() {
        let (Some(ex), Some(_)) = (&d.example, d.infer) else { continue };
        if !ex.attrs.is_empty() && !ex.attrs.starts_with("scalar=") {
            continue; // attributes are Python literals; the Python test covers these
        }
        let ins: Vec<NDArray> =
            ex.shapes.iter().map(|s| ferromx::ops::ones(Shape::new(s), DType::F32, ctx).unwrap()).collect();
        let metas: Vec<Meta> = ins.iter().map(Meta::of).collect();
        let mut attrs = Attrs::default();
        if let Some(v) = ex.attrs.strip_prefix("scalar=") {
            attrs.0.push(("scalar".into(), opdef::Attr::Float(v.parse().unwrap())));
        }
        let want = d.infer_meta(&attrs, &metas).unwrap();
        let opt: Vec<Option<NDArray>> = ins.into_iter().map(Some).collect();
        let got = opdef::invoke_def(d, &opt, &attrs).unwrap();
        let got: Vec<Meta> = got.iter().map(Meta::of).collect();
        assert_eq!(want, got, "{}", d.name);
    }
}

#[test]
fn unknown_parameters_are_errors_naming_the_op() {
    let x = ferromx::ops::ones(Shape::new(&[2]), DType::F32, Context::default()).unwrap();
    let a = Attrs(vec![("axes".into(), opdef::Attr::Int(0))]);
    let e = opdef::invoke("sum", &[Some(x)], &a).map(|_| ()).expect_err("rejected").to_string();
    assert!(e.contains("sum") && e.contains("'axes'"), "{e}");
}

#[test]
fn a_context_without_a_backend_fails_in_rust() {
    let e = NDArray::empty(Shape::new(&[2]), DType::F32, Context::gpu(0)).map(|_| ()).expect_err("no gpu backend");
    assert!(matches!(e, ferromx::Error::Device { .. }), "{e}");
    let e = NDArray::from_vec(vec![1.0f32], Shape::new(&[1]), Context::gpu(0)).map(|_| ()).expect_err("no gpu backend");
    assert!(e.to_string().contains("no backend"), "{e}");
    let a =
        Attrs(vec![("shape".into(), opdef::Attr::Ints(vec![2])), ("ctx".into(), opdef::Attr::Str("gpu(0)".into()))]);
    let e = opdef::invoke("_zeros", &[], &a).map(|_| ()).expect_err("no gpu backend").to_string();
    assert!(e.contains("zeros") && e.contains("gpu(0)"), "{e}");
}

#[test]
fn fill_operators_are_where_their_functions_expect_them() {
    let names: Vec<&str> = ferromx::ops::creation::DEFS.iter().map(|d| d.name).collect();
    assert_eq!([names[0], names[1], names[2]], ["_zeros", "_ones", "_full"]);
    assert_eq!([names[6], names[7], names[8]], ["zeros_like", "ones_like", "full_like"]);
    let x = ferromx::ops::full(Shape::new(&[3]), 2.5, DType::I32, Context::default()).unwrap();
    assert_eq!(x.to_vec::<i32>().unwrap(), [2, 2, 2]);
    let z = ferromx::ops::ones_like(&x).unwrap();
    assert_eq!(z.to_vec::<i32>().unwrap(), [1, 1, 1]);
}

fn attrs(kv: &[(&str, opdef::Attr)]) -> Attrs {
    Attrs(kv.iter().map(|(k, v)| (k.to_string(), v.clone())).collect())
}

fn def(name: &str) -> &'static opdef::OpDef {
    opdef::find(name).unwrap_or_else(|| panic!("{name} is not in the table"))
}

/// Graph facts are the table's, consistent with the definitions they describe.
#[test]
fn graph_forms_are_consistent() {
    use opdef::GraphForm;
    for d in opdef::table() {
        let g = &d.graph;
        if g.named_outputs {
            assert_eq!(d.outputs[0], "output", "{}: MXNet names a node's first output `output`", d.name);
        }
        if let opdef::OutputCount::Fixed(n) = g.total {
            assert!(n > 1 && n >= d.outputs.len(), "{}: a fixed total counts every output", d.name);
        }
        // An operator with a bias and `no_bias` lists the bias only when it is used.
        if d.inputs.contains(&"bias") && d.params.iter().any(|p| p.name == "no_bias") {
            assert!(g.inputs.is_some(), "{} lists its bias under no_bias", d.name);
            let a = attrs(&[("no_bias", opdef::Attr::Bool(true))]);
            let names = GraphForm::input_names(d, &a).expect("inputs");
            assert!(!names.contains(&"bias"), "{}: {names:?}", d.name);
        }
        // An operator with a `use_*` flag for an input lists it only when the flag is set.
        for n in d.inputs {
            if d.params.iter().any(|p| p.name == format!("use_{n}")) {
                let names = GraphForm::input_names(d, &Attrs::default()).expect("inputs");
                assert!(!names.contains(n), "{}: lists {n} with use_{n} off", d.name);
            }
        }
        // Auxiliary states are always listed.
        let names = GraphForm::input_names(d, &Attrs::default());
        if let Ok(names) = names {
            for a in d.aux {
                assert!(names.contains(a), "{}: aux {a} not listed", d.name);
            }
        }
    }
}

#[test]
fn graph_inputs_and_outputs_follow_the_attributes() {
    use opdef::{Attr, GraphForm};
    let fc = def("FullyConnected");
    assert_eq!(GraphForm::input_names(fc, &Attrs::default()).unwrap(), ["data", "weight", "bias"]);
    let lr = def("LeakyReLU");
    assert_eq!(GraphForm::input_names(lr, &Attrs::default()).unwrap(), ["data"]);
    let prelu = attrs(&[("act_type", Attr::Str("prelu".into()))]);
    assert_eq!(GraphForm::input_names(lr, &prelu).unwrap(), ["data", "gamma"]);
    // Deconvolution's bias is off by default, as in MXNet
    assert_eq!(GraphForm::input_names(def("Deconvolution"), &Attrs::default()).unwrap(), ["data", "weight"]);
    let bn = def("BatchNorm");
    assert_eq!(GraphForm::visible_outputs(bn, &Attrs::default()).unwrap(), 1);
    assert_eq!(GraphForm::total_outputs(bn, &Attrs::default()).unwrap(), 3);
    assert_eq!(GraphForm::output_names(bn, &Attrs::default()).unwrap(), ["output"]);
    let mv = attrs(&[("output_mean_var", Attr::Bool(true))]);
    assert_eq!(GraphForm::visible_outputs(bn, &mv).unwrap(), 3);
    assert_eq!(bn.outputs, ["output", "mean", "var"]);
    let rnn = def("RNN");
    let so = |mode: &str| attrs(&[("state_outputs", Attr::Bool(true)), ("mode", Attr::Str(mode.into()))]);
    assert_eq!(GraphForm::visible_outputs(rnn, &Attrs::default()).unwrap(), 1);
    assert_eq!(GraphForm::visible_outputs(rnn, &so("lstm")).unwrap(), 3);
    assert_eq!(GraphForm::visible_outputs(rnn, &so("gru")).unwrap(), 2);
    assert_eq!(GraphForm::output_names(rnn, &so("lstm")).unwrap(), ["output", "state_output", "statecell_output"]);
    let gru_len = attrs(&[("mode", Attr::Str("gru".into())), ("use_sequence_length", Attr::Bool(true))]);
    assert_eq!(GraphForm::input_names(rnn, &gru_len).unwrap(), ["data", "parameters", "state", "sequence_length"]);
    // MXNet 1.9.1 (recorded): topk's node has 2 outputs for 'value' and 'both', 1 for
    // 'indices' and 'mask'; with 2 in all its outputs are numbered, even one visible
    let topk = def("topk");
    let rt = |r: &str| attrs(&[("ret_typ", Attr::Str(r.into()))]);
    for (r, total, names) in [
        ("indices", 1, vec!["output"]),
        ("mask", 1, vec!["output"]),
        ("value", 2, vec!["output0"]),
        ("both", 2, vec!["output0", "output1"]),
    ] {
        assert_eq!(GraphForm::total_outputs(topk, &rt(r)).unwrap(), total, "{r}");
        assert_eq!(GraphForm::output_names(topk, &rt(r)).unwrap(), names, "{r}");
    }
    // max pooling's oneDNN workspace (1-d to 3-d); none for avg, sum or lp pooling
    let pool = def("Pooling");
    let pa = |t: &str, k: Vec<i64>| attrs(&[("pool_type", Attr::Str(t.into())), ("kernel", Attr::Ints(k))]);
    assert_eq!(GraphForm::total_outputs(pool, &pa("max", vec![2, 2])).unwrap(), 2);
    assert_eq!(GraphForm::total_outputs(pool, &pa("max", vec![2, 2, 2])).unwrap(), 2);
    assert_eq!(GraphForm::total_outputs(pool, &pa("avg", vec![2, 2])).unwrap(), 1);
    assert_eq!(GraphForm::total_outputs(pool, &pa("max", vec![2])).unwrap(), 2);
    assert_eq!(GraphForm::total_outputs(pool, &pa("lp", vec![2, 2])).unwrap(), 1);
    assert_eq!(GraphForm::output_names(pool, &pa("max", vec![2, 2])).unwrap(), ["output"]);
}

#[test]
fn parameter_shapes_follow_the_data_shape() {
    use opdef::{Attr, GraphForm};
    let shapes = |name: &str, a: &Attrs, data: &[usize]| -> Vec<(&'static str, Vec<usize>)> {
        let out = GraphForm::param_shapes(def(name), a, Some(&Shape::new(data))).unwrap();
        out.into_iter().map(|(n, s)| (n, s.dims().to_vec())).collect()
    };
    let fc = attrs(&[("num_hidden", Attr::Int(4))]);
    assert_eq!(shapes("FullyConnected", &fc, &[2, 3, 5]), [("weight", vec![4, 15]), ("bias", vec![4])]);
    let fc_nf = attrs(&[("num_hidden", Attr::Int(4)), ("flatten", Attr::Bool(false))]);
    assert_eq!(shapes("FullyConnected", &fc_nf, &[2, 3, 5])[0], ("weight", vec![4, 5]));
    let conv = |layout: &str| {
        attrs(&[
            ("kernel", Attr::Ints(vec![3, 2])),
            ("num_filter", Attr::Int(8)),
            ("num_group", Attr::Int(2)),
            ("layout", Attr::Str(layout.into())),
        ])
    };
    assert_eq!(shapes("Convolution", &conv("NCHW"), &[1, 6, 9, 9])[0], ("weight", vec![8, 3, 3, 2]));
    // channel-last data has a channel-last weight (what the kernel checks)
    assert_eq!(shapes("Convolution", &conv("NHWC"), &[1, 9, 9, 6])[0], ("weight", vec![8, 3, 2, 3]));
    assert_eq!(shapes("Deconvolution", &conv("NCHW"), &[1, 6, 9, 9])[0], ("weight", vec![6, 4, 3, 2]));
    let bn = attrs(&[("axis", Attr::Int(-1))]);
    assert!(shapes("BatchNorm", &bn, &[2, 3, 7]).iter().all(|(_, s)| s == &[7]));
    assert_eq!(shapes("BatchNorm", &bn, &[2, 3, 7]).len(), 4);
    let gn = attrs(&[("num_groups", Attr::Int(2))]);
    assert_eq!(shapes("GroupNorm", &gn, &[2, 4, 3]), [("gamma", vec![2]), ("beta", vec![2])]);
    // an unknown channel stays unknown (0), for the graph to learn later
    assert_eq!(shapes("InstanceNorm", &Attrs::default(), &[2, 0, 3])[0], ("gamma", vec![0]));
    assert!(GraphForm::param_shapes(def("exp"), &Attrs::default(), None).unwrap().is_empty());
}
