"""workload.names: demangling, the join key and short names, on symbols built here (nvcc, clang) and on the
spellings the tools print for them."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelpilot.isa.demangle import demangle_all
from kernelpilot.workload.names import demangle, demangle_many, name_keys, normalize, short_name

NVCC_ANON = "_ZN6kpdemo46_GLOBAL__N__71e107e3_13_names_demo_cu_5b1a3d0915anon_vec_kernelIfLi4EEEvPT_PKS2_i"
CLANG_ANON = "_ZN5kpamd12_GLOBAL__N_115anon_vec_kernelIfLi4EEEvPT_PKS2_i"


def test_demangles_nvcc_and_clang_anonymous_namespaces() -> None:
    assert demangle(NVCC_ANON) == (
        "void kpdemo::(anonymous namespace)::anon_vec_kernel<float, 4>(float*, float const*, int)"
    )
    assert demangle(CLANG_ANON + ".kd") == (
        "void kpamd::(anonymous namespace)::anon_vec_kernel<float, 4>(float*, float const*, int)"
    )
    assert demangle("plain_c_kernel") == "plain_c_kernel"
    assert demangle_many(["plain_c_kernel", CLANG_ANON])[CLANG_ANON].startswith("void kpamd::")


@pytest.mark.needs_tool("c++filt")
def test_in_process_demangler_spells_like_cxxfilt(monkeypatch: pytest.MonkeyPatch) -> None:
    names = [NVCC_ANON, CLANG_ANON, "_ZN6kpdemo12apply_kernelIfNS_5ScaleIfEEEEvPT_PKS3_iT0_"]
    with_tool = demangle_all(names)
    monkeypatch.setenv("KERNELPILOT_C__FILT", "/nonexistent/c++filt")
    assert demangle_all(names) == with_tool


@pytest.mark.parametrize(
    ("a", "b"),
    [
        # CUPTI/GNU spelling vs a `<unnamed>` spelling of the same kernel
        (
            "void kpdemo::(anonymous namespace)::anon_vec_kernel<float, 4>(float*, float const*, int)",
            "void kpdemo::<unnamed>::anon_vec_kernel<float, 4>(float*, float const*, int)",
        ),
        # the ELF symbol vs the demangled trace name
        (
            NVCC_ANON,
            "void kpdemo::(anonymous namespace)::anon_vec_kernel<float, 4>(float*, float const*, int)",
        ),
        # AMD kernel-descriptor symbol vs the kernel's name
        (
            CLANG_ANON + ".kd",
            "kpamd::(anonymous namespace)::anon_vec_kernel<float, 4>(float*, float const*, int)",
        ),
        ("plain_c_kernel.kd", "plain_c_kernel"),
        # `> >` (GNU) vs `>>`, and spacing
        ("void f<a::B<int> >(int)", "f<a::B<int>>( int )"),
        # NVIDIA's demangler (ncu, nsys) vs GNU's: integer and bool arguments, lambdas, pointer spacing
        ("void kpf::step_kernel<(int)1>(float *)", "_ZN3kpf11step_kernelILi1EEEvPf"),
        (
            "void f<(unsigned long)2, 1>(X::[lambda(float) (instance 3)])",
            "void f<2ul, true>(X::{lambda(float)#3})",
        ),
    ],
)
def test_normalize_joins_spellings_of_one_kernel(a: str, b: str) -> None:
    assert normalize(a) == normalize(b)


def test_keys_drop_parameters_templates_and_keep_the_own_name() -> None:
    k = name_keys(
        "void at::native::(anonymous namespace)::foo<float, at::native::Op<int> >(float*, int) const"
    )
    assert k.no_params == "at::native::(anonymous namespace)::foo<float,at::native::Op<int>>"
    assert k.base == "at::native::(anonymous namespace)::foo"
    assert k.own == "foo"
    assert not k.cut
    cut = name_keys("void at::native::vectorized_elementwise_kernel<4, at::native::Fill...")
    assert cut.cut and cut.own == "vectorized_elementwise_kernel"


def test_operator_names_do_not_break_bracket_matching() -> None:
    k = name_keys("void ns::kernel<ns::Less>(ns::Cmp::operator<(int) const)")
    assert k.no_params == "ns::kernel<ns::Less>"
    assert k.own == "kernel"


def test_short_name_keeps_the_kernel_and_its_op() -> None:
    mul = (
        "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float, "
        "at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul> >(int, "
        "at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, "
        "std::array<char*, 3ul>)"
    )
    assert short_name(mul) == "vectorized_elementwise_kernel<MulFunctor>"
    copy = (
        "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::"
        "direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::"
        "{lambda(float)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda("
        "at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda(float)#1} const&)::"
        "{lambda(int)#1}>(int, int)"
    )
    assert short_name(copy) == "elementwise_kernel<direct_copy_kernel_cuda>"
    ln = "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int)"
    assert short_name(ln) == "vectorized_layer_norm_kernel<BFloat16, float>"
    long_c = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_k__5x_cublas"
    s = short_name(long_c, 40)
    assert len(s) == 40 and s.startswith("sm90_xmma_gemm") and s.endswith("_cublas") and "…" in s


def test_short_name_of_generic_kernels_keeps_their_first_type_argument() -> None:
    cutlass = (
        "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x1_tn_align8>("
        "cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x1_tn_align8::Params)"
    )
    assert short_name(cutlass) == "Kernel2<cutlass_80_wmma_tensorop_…f16_32x32_128x1_tn_align8>"
    flash = (
        "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 64, 4, false, false, "
        "cutlass::bfloat16_t, Flash_kernel_traits<64, 128, 64, 4, cutlass::bfloat16_t> >, false, true, false>"
        "(flash::Flash_fwd_params)"
    )
    assert short_name(flash) == "flash_fwd_kernel<Flash_fwd_kernel_traits>"


def test_short_name_of_a_lambda_owned_by_a_template_function() -> None:
    pow_ = (
        "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
        "pow_tensor_scalar_kernel_impl<float, float>(at::TensorIteratorBase&, float)::{lambda(float)#1}, "
        "std::array<char*, 2ul> >(int, std::array<char*, 2ul>)"
    )
    assert short_name(pow_) == "vectorized_elementwise_kernel<pow_tensor_scalar_kernel_impl>"


@pytest.mark.parametrize("trace", ["h100_decode_trace.json", "h100_train_trace.json"])
def test_short_names_are_unique_within_a_result(trace: str):
    """Issue 36: two kernels shared `elementwise_kernel<MulFunctor>` in the text view; the distinguishing
    template arguments now follow the shared name."""
    from kernelpilot.workload.core import read_workload
    from kernelpilot.workload.models import WorkloadReadRequest

    path = Path(__file__).resolve().parent.parent / "fixtures" / "workload" / trace
    r = read_workload(WorkloadReadRequest(path=str(path)))
    shorts = [k.short_name for k in r.kernels]
    assert len(set(shorts)) == len(shorts)
    muls = sorted(s.split(" @")[0] for s in shorts if s.startswith("elementwise_kernel<MulFunctor>"))
    assert len(muls) >= 2 and all(s.endswith("]") for s in muls)  # " @dims": a row per shape (issue 44)
    assert "elementwise_kernel<MulFunctor> [4, BFloat16]" in shorts or trace != "h100_decode_trace.json"


def test_unique_short_names_fall_back_to_a_number():
    from kernelpilot.workload.names import unique_short_names

    assert unique_short_names(["a::k<int>", "b::k<int>"]) == ["k<int> [a]", "k<int> [b]"]
    assert unique_short_names(["x::k<int>", "k<int>"]) == ["k<int> [x]", "k<int> [#2]"]
    assert unique_short_names(["a", "b"]) == ["a", "b"]
