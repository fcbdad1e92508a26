"""ray-compat's rules on small synthetic source trees (conformance/compat): a baseline Ray and a
target Ray written as a few files in tmp_path, and a plugin beside them. Nothing is imported or run:
the compat package reads source with `ast`."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from conformance.compat.check import (
    Answer,
    Scanned,
    call_problems,
    check_local_constructions,
    check_manifest_classes,
    check_plugin_classes,
    check_uses,
    manifest_refs,
    option_keys,
    override_problems,
    plugin_modules,
)
from conformance.compat.index import Index
from conformance.compat.model import Method, Missing, Signature, Symbol, Unknown
from conformance.compat.source import DirTree, from_path, obtain, pip_reason, version_of
from conformance.compat.uses import CallShape, scan
from conformance.errors import UserError

MANAGER_260 = '''
from abc import ABC, abstractmethod
from typing import Optional, Tuple

class AcceleratorManager(ABC):
    @staticmethod
    @abstractmethod
    def get_resource_name() -> str: ...

    @staticmethod
    @abstractmethod
    def get_current_node_num_accelerators() -> int: ...

    @staticmethod
    @abstractmethod
    def validate_resource_request_quantity(quantity: float) -> Tuple[bool, Optional[str]]: ...

    @staticmethod
    def get_current_node_accelerator_labels() -> dict:
        return {}
'''

RDT = {
    "ray/experimental/__init__.py": "",
    "ray/experimental/rdt/__init__.py": "from ray.experimental.rdt.tensor_transport_manager import (\n"
                                        "    TensorTransportManager, TensorTransportMetadata)\n"
                                        "from .util import register_tensor_transport\n",
    "ray/experimental/rdt/tensor_transport_manager.py": '''
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Optional

@dataclass
class TensorTransportMetadata:
    tensor_meta: list
    tensor_device: Optional[str] = None

class TensorTransportManager(ABC):
    @abstractmethod
    def tensor_transport_backend(self) -> str: ...
    @abstractmethod
    def recv_multiple_tensors(self, obj_id, tensor_transport_metadata, communicator_metadata): ...
''',
    "ray/experimental/rdt/util.py": "def register_tensor_transport(transport_name, devices, transport_manager_class, "
                                    "data_type):\n    pass\n",
}

PLUGIN_MANAGER = '''
from ray._private.accelerators.accelerator import AcceleratorManager

class AcmeManager(AcceleratorManager):
    @staticmethod
    def get_resource_name():
        return "ACME"

    @staticmethod
    def get_current_node_num_accelerators():
        return 4

    @staticmethod
    def validate_resource_request_quantity(quantity):
        return True, None

    @staticmethod
    def _probe():            # the plugin's own helper, never Ray's
        return 0
'''


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def ray_tree(root: Path, manager: str = MANAGER_260, extra: dict[str, str] | None = None, version: str = "2.60.0") -> DirTree:
    write(root, {"ray/__init__.py": "", "ray/_version.py": f'version = "{version}"\n',
                 "ray/_private/__init__.py": "", "ray/_private/accelerators/__init__.py": "",
                 "ray/_private/accelerators/accelerator.py": manager, **RDT, **(extra or {})})
    return DirTree(root, str(root))


def setup(tmp_path: Path, *, target_manager: str = MANAGER_260, plugin: str = PLUGIN_MANAGER,
          target_extra: dict[str, str] | None = None, plugin_files: dict[str, str] | None = None,
          ) -> tuple[Index, Index, Scanned, Answer]:
    baseline = ray_tree(tmp_path / "base")
    target = ray_tree(tmp_path / "target", target_manager, target_extra, version="2.61.0")
    write(tmp_path / "plugin", {"acme/__init__.py": "", "acme/manager.py": plugin, **(plugin_files or {})})
    roots = [tmp_path / "plugin"]
    t, b = Index(target, roots), Index(baseline, roots)
    scanned = plugin_modules({"accelerator.manager": "acme.manager:AcmeManager"}, t)
    return t, b, scanned, Answer("2.61.0", "test", "2.60.0")


def judge(tmp_path: Path, **kw: object) -> Answer:
    t, b, plugin, answer = setup(tmp_path, **kw)  # type: ignore[arg-type]
    check_uses(answer, t, b, plugin)
    check_plugin_classes(answer, t, b, plugin)
    check_local_constructions(answer, t, plugin)
    check_manifest_classes(answer, t, {"accelerator.manager": "acme.manager:AcmeManager"})
    return answer


def kinds(answer: Answer) -> list[tuple[str, str]]:
    return [(f.kind, f.subject) for f in answer.breaks]


# ------------------------------------------------------------------------------------------ verdicts
def test_the_same_interface_is_compatible_and_counts_what_it_held(tmp_path: Path) -> None:
    answer = judge(tmp_path)
    assert answer.compatible, answer.breaks
    assert answer.held["overrides"] == 3 and answer.held["base classes"] == 1 and answer.held["imports"] == 1


def test_a_renamed_method_the_plugin_overrides_is_named_with_the_new_name_as_a_hint(tmp_path: Path) -> None:
    renamed = MANAGER_260.replace("def get_current_node_num_accelerators", "def get_current_node_num_devices")
    answer = judge(tmp_path, target_manager=renamed)
    assert not answer.compatible
    removed = [f for f in answer.breaks if f.kind == "removed-method"]
    assert [f.subject for f in removed] == ["AcceleratorManager.get_current_node_num_accelerators"]
    assert "AcmeManager.get_current_node_num_accelerators overrides" in removed[0].detail
    assert "new in Ray 2.61.0's AcceleratorManager: get_current_node_num_devices" in removed[0].detail
    assert removed[0].where.endswith("acme/manager.py:10")
    # and the renamed one is abstract there, which the plugin does not implement
    assert ("abstract", "AcceleratorManager.get_current_node_num_devices") in kinds(answer)


def test_a_removed_optional_method_is_a_break_only_when_the_plugin_overrides_it(tmp_path: Path) -> None:
    without = MANAGER_260.replace("def get_current_node_accelerator_labels", "def _labels")
    assert judge(tmp_path / "a", target_manager=without).compatible
    plugin = PLUGIN_MANAGER + "\n    @staticmethod\n    def get_current_node_accelerator_labels():\n        return {}\n"
    answer = judge(tmp_path / "b", target_manager=without, plugin=plugin)
    assert kinds(answer) == [("removed-method", "AcceleratorManager.get_current_node_accelerator_labels")]


def test_a_new_parameter_ray_passes_breaks_the_override(tmp_path: Path) -> None:
    wider = MANAGER_260.replace("validate_resource_request_quantity(quantity: float)",
                                "validate_resource_request_quantity(quantity: float, resource_name: str)")
    answer = judge(tmp_path, target_manager=wider)
    assert kinds(answer) == [("signature", "AcceleratorManager.validate_resource_request_quantity")]
    assert "passes up to 2 positional argument(s); the override (quantity) takes 1" in answer.breaks[0].detail


def test_a_new_optional_method_is_a_note_and_a_new_abstract_one_a_break(tmp_path: Path) -> None:
    more = MANAGER_260 + "\n    @staticmethod\n    def get_topology():\n        return None\n"
    answer = judge(tmp_path / "a", target_manager=more)
    assert answer.compatible and [(n.kind, n.subject) for n in answer.notes] == \
        [("new-method", "AcceleratorManager.get_topology")]
    abstract = more.replace("    def get_topology", "    @abstractmethod\n    def get_topology")
    answer = judge(tmp_path / "b", target_manager=abstract)
    assert kinds(answer) == [("abstract", "AcceleratorManager.get_topology")]
    assert "(it was not in Ray 2.60.0); AcmeManager does not implement it" in answer.breaks[0].detail


def test_an_abstract_method_the_certified_plugin_already_left_to_ray_is_a_note(tmp_path: Path) -> None:
    plugin = PLUGIN_MANAGER.replace("def validate_resource_request_quantity", "def _validate")
    answer = judge(tmp_path, plugin=plugin)
    assert answer.compatible
    assert ("abstract", "AcceleratorManager.validate_resource_request_quantity") in \
        [(n.kind, n.subject) for n in answer.notes]


def test_a_plugin_importing_a_ray_symbol_that_does_not_exist_is_named(tmp_path: Path) -> None:
    plugin = "from ray._private.accelerators.accelerator import get_visible_ids\n" + PLUGIN_MANAGER
    answer = judge(tmp_path, plugin=plugin)
    assert kinds(answer) == [("missing-symbol", "ray._private.accelerators.accelerator.get_visible_ids")]
    f = answer.breaks[0]
    assert f.who == "plugin" and f.where.endswith("acme/manager.py:1")
    assert "Ray 2.60.0 has no such symbol either" in f.detail


def test_a_missing_module_is_one_finding_for_every_name_under_it(tmp_path: Path) -> None:
    plugin = PLUGIN_MANAGER + textwrap.dedent('''
        from ray.util.collective.backend_registry import register_collective_backend, _global_registry

        def register():
            if not _global_registry.is_registered("ACME"):
                register_collective_backend("ACME", object)
        ''')
    answer = judge(tmp_path, plugin=plugin)
    assert kinds(answer) == [("missing-symbol", "ray.util")]
    assert "and 3 more use(s)" in answer.breaks[0].detail


def test_a_guarded_import_is_a_note(tmp_path: Path) -> None:
    plugin = "try:\n    from ray.util.nothing import x\nexcept ImportError:\n    x = None\n" + PLUGIN_MANAGER
    answer = judge(tmp_path, plugin=plugin)
    assert answer.compatible
    assert [(n.kind, n.subject) for n in answer.notes] == [("missing-symbol", "ray.util")]


def test_a_static_method_overridden_by_an_instance_method_breaks() -> None:
    base = Method("get_resource_name", "static", Signature(()), True, "ray.a:M", 1)
    over = Method("get_resource_name", "instance", Signature(()), False, "acme:M", 2)
    assert override_problems(base, over) == ["Ray calls it on the class (staticmethod); the override is an instance method"]


@pytest.mark.parametrize("shape, expected", [
    (CallShape(4, (), False, False), []),
    (CallShape(3, (), False, False), ["leaves out required data_type of (transport_name, devices, "
                                      "transport_manager_class, data_type)"]),
    (CallShape(3, ("data_type",), False, False), []),
    (CallShape(2, ("extra",), False, True), ["passes keyword extra; (transport_name, devices, "
                                             "transport_manager_class, data_type) has no such parameter"]),
])
def test_call_shapes_against_a_signature(shape: CallShape, expected: list[str]) -> None:
    sig = Signature(tuple(__import__("conformance.compat.index", fromlist=["Param"]).Param(n, "pos", False)
                          for n in ("transport_name", "devices", "transport_manager_class", "data_type")))
    assert call_problems(sig, shape) == expected


def test_a_call_the_target_no_longer_binds_is_named(tmp_path: Path) -> None:
    transport = '''
        import torch
        from ray.experimental.rdt import TensorTransportManager, register_tensor_transport

        class AcmeTransport(TensorTransportManager):
            def tensor_transport_backend(self):
                return "ACME"
            def recv_multiple_tensors(self, obj_id, meta, comm):
                return []

        def register():
            register_tensor_transport("ACME", ["cpu"], AcmeTransport)
        '''
    answer = judge(tmp_path, plugin_files={"acme/transport.py": transport},
                   plugin=PLUGIN_MANAGER + "\nfrom acme import transport\n")
    assert kinds(answer) == [("call", "ray.experimental.rdt.register_tensor_transport")]
    assert answer.breaks[0].where.endswith("acme/transport.py:12")
    assert [n.kind for n in answer.notes] == ["parameter-names"]   # meta/comm: passed by position


def test_rdt_metadata_fields_the_target_requires_are_held_to_the_plugin(tmp_path: Path) -> None:
    transport = '''
        from dataclasses import dataclass
        from ray.experimental.rdt import TensorTransportMetadata

        @dataclass
        class AcmeMeta(TensorTransportMetadata):
            segment: str = ""

        def make(obj_id):
            return AcmeMeta(tensor_meta=[], tensor_device="cpu", segment=obj_id)
        '''
    new_field = RDT["ray/experimental/rdt/tensor_transport_manager.py"].replace(
        "    tensor_device: Optional[str] = None\n", "    tensor_device: Optional[str] = None\n    target_device: str = 'x'\n")
    ok = judge(tmp_path / "a", plugin_files={"acme/transport.py": transport},
               plugin=PLUGIN_MANAGER + "\nfrom acme import transport\n",
               target_extra={"ray/experimental/rdt/tensor_transport_manager.py": new_field})
    assert ok.compatible and ok.held["constructions"] == 1
    required = RDT["ray/experimental/rdt/tensor_transport_manager.py"].replace(
        "    tensor_meta: list\n", "    tensor_meta: list\n    src_rank: int\n")
    answer = judge(tmp_path / "b", plugin_files={"acme/transport.py": transport},
                   plugin=PLUGIN_MANAGER + "\nfrom acme import transport\n",
                   target_extra={"ray/experimental/rdt/tensor_transport_manager.py": required})
    assert kinds(answer) == [("call", "AcmeMeta(...)")]
    assert "leaves out required src_rank" in answer.breaks[0].detail


def test_a_manifest_class_must_still_extend_the_ray_class(tmp_path: Path) -> None:
    plugin = "from ray._private.accelerators.accelerator import AcceleratorManager\n\nclass AcmeManager:\n    pass\n"
    answer = judge(tmp_path, plugin=plugin)
    assert kinds(answer) == [("base-class", "accelerator.manager")]


# ------------------------------------------------------------------------------------------ the index
def test_names_resolve_through_reexports_stars_aliases_and_submodules(tmp_path: Path) -> None:
    tree = ray_tree(tmp_path, extra={
        "ray/util/__init__.py": "from ray.util.inner import *\nfrom . import sub as renamed\n",
        "ray/util/inner.py": "__all__ = ['public']\ndef public(): pass\ndef hidden(): pass\n",
        "ray/util/sub.py": "class Registry:\n    def get(self, name): ...\n    def __init__(self):\n"
                           "        self.items = {}\n_registry = Registry()\nAlias = Registry\n",
        "ray/util/lazy.py": "def __getattr__(name):\n    raise AttributeError(name)\n",
    })
    index = Index(tree)
    assert isinstance(index.resolve("ray.util.public"), Symbol)
    assert isinstance(index.resolve("ray.util.hidden"), Missing)   # not in inner's __all__
    assert index.resolve("ray.util.renamed").dotted == "ray.util.sub"  # type: ignore[union-attr]
    assert index.resolve("ray.util.sub.Alias").dotted == "ray.util.sub.Registry"  # type: ignore[union-attr]
    assert isinstance(index.resolve("ray.util.sub._registry.get"), Symbol)
    assert isinstance(index.resolve("ray.util.sub._registry.items"), Symbol)    # self.items = ...
    gone = index.resolve("ray.util.sub._registry.put")
    assert isinstance(gone, Missing) and gone.runtime
    assert isinstance(index.resolve("ray.util.lazy.anything"), Unknown)
    assert index.first_missing("ray.util.nothing.deeper.still") == ("ray.util.nothing", index.resolve("ray.util.nothing"))


def test_a_namespace_package_and_a_generated_module_that_fills_its_globals(tmp_path: Path) -> None:
    """Ray 2.60's ray/core/generated has no __init__.py (a namespace package) and its *_pb2 modules
    bind their message classes by handing globals() to protobuf's builder: the package's modules
    resolve, and a message class the source cannot see is Unknown, never a break."""
    tree = ray_tree(tmp_path, extra={
        "ray/core/__init__.py": "",
        "ray/core/generated/gcs_pb2.py": "from google.protobuf.internal import builder as _builder\n"
                                         "DESCRIPTOR = None\n"
                                         "_builder.BuildTopDescriptorsAndMessages(DESCRIPTOR, 'gcs_pb2', globals())\n",
        "ray/core/plain.py": "X = 1\n",
    })
    index = Index(tree)
    assert isinstance(index.resolve("ray.core.generated.gcs_pb2"), Symbol)
    assert isinstance(index.resolve("ray.core.generated.gcs_pb2.ActorTableData"), Unknown)
    assert isinstance(index.resolve("ray.core.generated.nothing_pb2"), Missing)   # the folder holds no such module
    assert isinstance(index.resolve("ray.core.plain.Y"), Missing)                 # a plain module still decides
    assert isinstance(index.resolve("ray.core.absent.X"), Missing)                # no folder, no module


def test_compiled_modules_and_overloads(tmp_path: Path) -> None:
    tree = ray_tree(tmp_path, extra={
        "ray/_raylet.cpython-311-x86_64-linux-gnu.so": "",
        "ray/api.py": "from typing import overload\n@overload\ndef get(refs, *, timeout=None): ...\n"
                      "def get(refs, *, timeout=None, _use_object_store=False): pass\n",
    })
    index = Index(tree)
    assert isinstance(index.resolve("ray._raylet.ObjectRef"), Unknown)
    got = index.resolve("ray.api.get")
    assert isinstance(got, Symbol)
    uses, _ = scan("from ray.api import get\nget(r, _use_object_store=True)\n", module="m", is_package=False, path="m.py")
    t = Index(tree)
    answer = Answer("x", "x", "x")
    check_uses(answer, t, t, Scanned("suite", uses))
    assert answer.compatible and answer.held == {"imports": 1, "calls": 1}


def test_the_scan_sees_calls_through_module_aliases_and_skips_what_the_module_sets_itself() -> None:
    source = textwrap.dedent('''
        import ray
        import ray._private.accelerators as acc
        from ray.util import collective as col
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from ray.actor import ActorHandle

        def f(t):
            col.allreduce(t, group_name="g")
            acc._mine = acc.get_all_accelerator_managers
            return acc._mine(), ray.get(t, timeout=1)
        ''')
    uses, _ = scan(source, module="m", is_package=False, path="m.py")
    seen = {(u.kind, u.target) for u in uses}
    assert ("call", "ray.util.collective.allreduce") in seen and ("call", "ray.get") in seen
    assert not any("_mine" in u.target for u in uses)
    assert [u.type_only for u in uses if u.target == "ray.actor.ActorHandle"] == [True]
    call = next(u for u in uses if u.target == "ray.util.collective.allreduce")
    assert call.call == CallShape(1, ("group_name",), False, False)


def test_option_keys_are_the_string_keys_of_rays_option_tables(tmp_path: Path) -> None:
    tree = ray_tree(tmp_path, extra={"ray/_common/__init__.py": "",
                                     "ray/_common/ray_option_utils.py":
                                         "_common_options = {'label_selector': 1}\n"
                                         "actor_options: dict = {**_common_options, 'enable_tensor_transport': 2}\n"})
    assert option_keys(Index(tree)) == {"label_selector", "enable_tensor_transport"}
    assert option_keys(Index(ray_tree(tmp_path / "none"))) is None


# ------------------------------------------------------------------------------------------ inputs
def test_manifest_refs_are_every_module_reference_by_field() -> None:
    data = {"accelerator": {"manager": "acme.m:Mgr", "env": {"A": "0,1;2,3"}},
            "collective": {"group_class": "acme.c:G", "register": "acme.c:register"}, "cluster": {"node_env": [{"X": "a:b c"}]}}
    assert manifest_refs(data) == {"accelerator.manager": "acme.m:Mgr", "collective.group_class": "acme.c:G",
                                   "collective.register": "acme.c:register"}


def test_a_wheel_a_site_packages_or_the_ray_folder(tmp_path: Path) -> None:
    import zipfile

    ray_tree(tmp_path / "site")
    assert from_path(tmp_path / "site").version == "2.60.0"
    assert from_path(tmp_path / "site" / "ray").version == "2.60.0"
    wheel = tmp_path / "ray-2.60.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("ray/__init__.py", "")
        z.writestr("ray/_version.py", 'version = "2.60.0"\n')
    assert version_of(from_path(wheel).tree) == "2.60.0"
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(UserError, match=r"--ray: .*notes.txt is a file but not a wheel"):
        from_path(tmp_path / "notes.txt")
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="holds no ray package"):
        from_path(tmp_path / "empty")
    with pytest.raises(UserError, match=r"--ray: 'latest' is not a file or folder here, nor a Ray version"):
        obtain("latest", tmp_path, timeout_s=1)


def test_pip_reason_is_its_last_error_line() -> None:
    stderr = "WARNING: Location x is ignored\nERROR: Could not find a version that satisfies the requirement " \
             "ray==9.9\nERROR: No matching distribution found for ray==9.9\n"
    assert pip_reason(stderr) == "ERROR: No matching distribution found for ray==9.9"
    assert pip_reason("", "") == "pip failed without a message"


def test_a_manifest_module_or_class_the_source_lacks_is_a_user_error(tmp_path: Path) -> None:
    t, _, _, _ = setup(tmp_path)
    with pytest.raises(UserError, match=r"^manifest: accelerator\.manager: module 'acme\.gone' has no Python source"):
        plugin_modules({"accelerator.manager": "acme.gone:Mgr"}, t)
    with pytest.raises(UserError, match=r"^manifest: accelerator\.manager: module 'acme\.manager' has no attribute 'Nope'$"):
        plugin_modules({"accelerator.manager": "acme.manager:Nope"}, t)


def test_a_target_module_this_python_cannot_parse_is_unknown_not_a_break(tmp_path: Path) -> None:
    tree = ray_tree(tmp_path, extra={"ray/future.py": "type Alias = list[int]\ndef f[T](x: T) -> T: ...\n"})
    assert isinstance(Index(tree).resolve("ray.future.f"), (Symbol, Unknown))
    bad = ray_tree(tmp_path / "bad", extra={"ray/broken.py": "def (:\n"})
    assert isinstance(Index(bad).resolve("ray.broken.f"), Unknown)


def test_a_manifest_naming_rays_own_class_holds_it_as_a_ray_interface(tmp_path: Path) -> None:
    t, b, _, answer = setup(tmp_path)
    scanned = plugin_modules({"accelerator.manager": "ray._private.accelerators.npu:NPUAcceleratorManager",
                              "transport.manager": "acme.manager:AcmeManager"}, t)
    assert "ray._private.accelerators.npu" not in scanned.modules and "acme.manager" in scanned.modules
    check_uses(answer, t, b, scanned)
    assert kinds(answer) == [("missing-symbol", "ray._private.accelerators.npu")]
    assert answer.breaks[0].where == "manifest accelerator.manager"


def test_a_class_attribute_ray_sets_at_run_time_is_a_note_unless_the_baseline_defines_it(tmp_path: Path) -> None:
    types_260 = "class Backend(object):\n    NCCL = 'NCCL'\n    GLOO = 'GLOO'\n"
    plugin = PLUGIN_MANAGER + "\nfrom ray.util.types import Backend\n\ndef backend():\n    return Backend.HCCL, Backend.GLOO\n"
    extra = {"ray/util/__init__.py": "", "ray/util/types.py": types_260}
    baseline = ray_tree(tmp_path / "base", extra=extra)
    gone = {"ray/util/__init__.py": "", "ray/util/types.py": types_260.replace("    GLOO = 'GLOO'\n", "")}
    target = ray_tree(tmp_path / "target", extra=gone)
    write(tmp_path / "plugin", {"acme/__init__.py": "", "acme/manager.py": plugin})
    t, b = Index(target, [tmp_path / "plugin"]), Index(baseline, [tmp_path / "plugin"])
    answer = Answer("2.61.0", "test", "2.60.0")
    check_uses(answer, t, b, plugin_modules({"accelerator.manager": "acme.manager:AcmeManager"}, t))
    assert kinds(answer) == [("missing-symbol", "ray.util.types.Backend.GLOO")]     # Ray 2.60 defined it
    assert [(n.kind, n.subject) for n in answer.notes] == [("run-time-attribute", "ray.util.types.Backend.HCCL")]
