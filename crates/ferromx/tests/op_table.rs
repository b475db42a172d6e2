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
