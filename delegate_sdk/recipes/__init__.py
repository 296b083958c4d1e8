"""Version recipes: for each (op, version), the smallest model that needs exactly that version.

A delegate declares, per op, the versions it runs (``support_table``). To test such a
declaration it needs, for every declared version, a model whose node *is* that version,
and for the version above, one it must refuse. A recipe builds that model with the
project's builder, which stamps every node with the minimum version TFLite's rules give
(``schema.versioning.get_builtin_operator_version``): a recipe does not choose its version,
it chooses the types, shapes and params that make the rules give it. Every recipe is
checked against the rules when it is used (``single_op_model``) and by the tests.

The recipes are generated from one small builder per op family and a table, per op, of
the variation that makes each version:
the input type (float32, int8 or int16 quantized, int64, bool, string...), a rank above
4, a param (dilation, ``keep_num_dims``, ``half_pixel_centers``...), a hybrid or
per-channel filter. Float is used wherever the version allows: a float-only delegate can
test DEPTHWISE_CONV_2D v2 (dilation), FULLY_CONNECTED v5 and v6, SUB v3 (5-D broadcast).

There is a recipe for every (op, version) the CPU backend registers, plus the versions
TFLite defines that it does not register (int4, int2, bfloat16, sparse or shuffled
weights: family ``"dry run only"``, for ``plan_delegation`` and a cap's "version above"
check). ``UNBUILDABLE_VERSIONS`` lists, with the reason, the (op, version) pairs that the
rules never give to a model the kernels accept (TFLite's rule for TRANSPOSE_CONV v5 tests
the output-shape tensor for int16, which is always int32); those the CPU registers have a
recipe stamped *by hand* (``Recipe.hand_stamped`` says why), except DEQUANTIZE v4, which no
rule gives at all.

Per type: ``TYPED_RECIPES`` holds, for (op, version, dtype), the int8, uint8 and int16
forms of a version whose default recipe is of another type (uint8 CONV_2D v1, int8
RESHAPE v1, int8 FULLY_CONNECTED v5...), and bit-exact int8 models of the main integer
kernels; :func:`typed_recipes` ``(op, "int8")`` gives every version of an op in a type,
which is what an int8-only delegate's tests need (``assert_takes_versions_up_to`` infers
the type, ``check_delegate(..., dtype="int8")``).

Authors add their own (a custom layout, another type) with :func:`register_recipe`.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from types import ModuleType

from delegate_sdk.recipes.base import (
    DTYPE_FORMS,
    QUANTIZED_DTYPES,
    TYPED_RECIPES,
    UNBUILDABLE_VERSIONS,
    VERSION_RECIPES,
    Recipe,
    RecipeError,
    checked_model,
    dtype_name,
    recipe,
    recipes_for,
    register_recipe,
    rule_version,
    single_op_model,
    typed_recipes,
)

__all__ = [
    "DTYPE_FORMS",
    "QUANTIZED_DTYPES",
    "Recipe",
    "RecipeError",
    "TYPED_RECIPES",
    "UNBUILDABLE_VERSIONS",
    "VERSION_RECIPES",
    "recipe",
    "recipes_for",
    "register_recipe",
    "checked_model",
    "rule_version",
    "single_op_model",
    "typed_recipes",
    "dtype_name",
    "family_modules",
]


def family_modules() -> list[ModuleType]:
    """The family modules of this package, by name."""
    return [
        importlib.import_module(f"{__name__}.{info.name}")
        for info in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name)
        if info.name != "base" and not info.name.startswith("_")
    ]


def _install() -> None:
    """Fill the tables from the family modules; a key given twice is a mistake in them."""
    modules = family_modules()
    for module in modules:
        for key, why in getattr(module, "UNBUILDABLE", {}).items():
            _add(UNBUILDABLE_VERSIONS, (int(key[0]), key[1]), why, module)
    for module in modules:
        for entry in module.recipes():
            _add(VERSION_RECIPES, (int(entry.op), entry.version), dataclasses.replace(entry, op=int(entry.op)), module)
    for module in modules:
        for entry in getattr(module, "typed", tuple)():
            typed = dataclasses.replace(entry, op=int(entry.op), family="typed")
            _add(TYPED_RECIPES, (typed.op, typed.version, typed.dtype), typed, module)
    for module in modules:
        for entry in getattr(module, "variants", tuple)():
            # what the rules give it is checked by the tests
            TYPED_RECIPES.setdefault((int(entry.op), entry.version, entry.dtype),
                                     dataclasses.replace(entry, op=int(entry.op), family="typed"))


def _add(table: dict, key, value, module: ModuleType) -> None:
    if key in table:
        raise ValueError(f"{module.__name__} gives a second recipe entry for {key}")
    table[key] = value


_install()
