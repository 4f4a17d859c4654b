"""A value held against a botocore shape: member names and casing, required members, types,
enums, string patterns and lengths, list and number limits.

Three readers share the rules: decoded JSON and CBOR (typed values), query-protocol forms
(EC2's and IAM's, every value a string), and XML answers. Each returns mismatches as
(path, message) pairs; an empty list means the value is as AWS's model says.
"""

import base64
import datetime as dt
import functools
import re

# The `regex` module reads the models' Unicode classes (\p{L}, \p{Z}, …) that `re` cannot.
import regex

SCALARS = {"string", "integer", "long", "float", "double", "boolean", "timestamp", "blob"}


def _limits(shape, count, path, what):
    out = []
    low, high = shape.metadata.get("min"), shape.metadata.get("max")
    if low is not None and count < low:
        out.append((path, f"{what} {count} is below the model's min {low}"))
    if high is not None and count > high:
        out.append((path, f"{what} {count} is above the model's max {high}"))
    return out


# Enum values AWS documents and answers beyond its model's enum, by shape name: filled by
# documented.py, each with its page.
EXTRA_ENUM = {}


def _string(shape, value, path):
    out = []
    if shape.enum and value not in shape.enum and value not in EXTRA_ENUM.get(shape.name, ()):
        shown = ", ".join(shape.enum[:12]) + (", …" if len(shape.enum) > 12 else "")
        out.append((path, f"'{value}' is not in the enum {shape.name} ({shown})"))
    out += _limits(shape, len(value), path, "length")
    pattern = shape.metadata.get("pattern")
    if pattern:
        compiled = _compiled(pattern)
        if compiled is None:
            out.append((path, f"the model's pattern {pattern} could not be compiled, so '{value[:80]}' is unchecked"))
        # Smithy patterns are ECMA 262 and not implicitly anchored: a search.
        elif compiled.search(value) is None:
            out.append((path, f"'{value[:80]}' does not match the pattern {pattern}"))
    return out


# Java's way of writing every supplementary character, as UTF-16 surrogate pairs, which a
# pattern over code points spells as one range.
_SURROGATE_RANGE = "\\uD800\\uDC00-\\uDBFF\\uDFFF"


@functools.lru_cache(maxsize=None)
def _compiled(pattern):
    try:
        return regex.compile(pattern.replace(_SURROGATE_RANGE, "\\U00010000-\\U0010FFFF"))
    except regex.error:
        return None


def _number(shape, value, path):
    return _limits(shape, value, path, "value")


def _members(shape, present, path, required=True):
    """Unknown and missing members of a structure, given the member names present."""
    out = [(f"{path}.{name}", f"no member '{name}' in {shape.name}") for name in present
           if name not in shape.members]
    if required:
        out += [(f"{path}.{name}", f"required member '{name}' of {shape.name} is missing")
                for name in shape.required_members if name not in present]
    if shape.metadata.get("union") and len([n for n in present if n in shape.members]) != 1:
        out.append((path, f"union {shape.name} must set exactly one member"))
    return out


def typed(shape, value, path="$"):
    """JSON or CBOR: values carry their own types."""
    kind = shape.type_name
    if kind == "structure":
        if not isinstance(value, dict):
            return [(path, f"expected an object for {shape.name}, got {type(value).__name__}")]
        out = _members(shape, list(value), path)
        for name, item in value.items():
            if name not in shape.members:
                continue
            if item is None:
                # AWS leaves a member out; a JSON null is no value of any modelled type.
                out.append((f"{path}.{name}", f"null for member '{name}' (AWS omits it)"))
                continue
            out += typed(shape.members[name], item, f"{path}.{name}")
        return out
    if kind == "list":
        if not isinstance(value, list):
            return [(path, f"expected a list for {shape.name}, got {type(value).__name__}")]
        out = _limits(shape, len(value), path, "list length")
        for i, item in enumerate(value):
            out += typed(shape.member, item, f"{path}[{i}]")
        return out
    if kind == "map":
        if not isinstance(value, dict):
            return [(path, f"expected a map for {shape.name}, got {type(value).__name__}")]
        out = _limits(shape, len(value), path, "map size")
        for key, item in value.items():
            out += typed(shape.key, key, f"{path}<key>")
            out += typed(shape.value, item, f"{path}[{key!r}]")
        return out
    if kind == "string":
        if not isinstance(value, str):
            return [(path, f"expected a string, got {type(value).__name__} {value!r}")]
        return _string(shape, value, path)
    if kind in ("integer", "long"):
        if isinstance(value, bool) or not isinstance(value, int):
            return [(path, f"expected an integer, got {value!r}")]
        return _number(shape, value, path)
    if kind in ("float", "double"):
        if isinstance(value, str) and value in ("NaN", "Infinity", "-Infinity"):
            return []
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return [(path, f"expected a number, got {value!r}")]
        return _number(shape, value, path)
    if kind == "boolean":
        return [] if isinstance(value, bool) else [(path, f"expected a boolean, got {value!r}")]
    if kind == "timestamp":
        if isinstance(value, (int, float, dt.datetime)) and not isinstance(value, bool):
            return []
        if isinstance(value, str) and _iso8601(value):
            return []
        return [(path, f"expected a timestamp, got {value!r}")]
    if kind == "blob":
        if isinstance(value, (bytes, bytearray)):
            return []
        try:
            base64.b64decode(value, validate=True)
            return []
        except (ValueError, TypeError):
            return [(path, "expected base64 bytes")]
    return [(path, f"unhandled shape type {kind}")]


def _iso8601(text):
    try:
        dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        return True
    except ValueError:
        return False


def scalar_text(shape, text, path):
    """A scalar spelled as text (a query form value or an XML element's text)."""
    kind = shape.type_name
    text = text or ""
    if kind == "string":
        return _string(shape, text, path)
    if kind in ("integer", "long"):
        if not re.fullmatch(r"-?\d+", text.strip()):
            return [(path, f"expected an integer, got '{text}'")]
        return _number(shape, int(text), path)
    if kind in ("float", "double"):
        try:
            return _number(shape, float(text), path)
        except ValueError:
            return [(path, f"expected a number, got '{text}'")]
    if kind == "boolean":
        return [] if text in ("true", "false") else [(path, f"expected true or false, got '{text}'")]
    if kind == "timestamp":
        return [] if _iso8601(text.strip()) or re.fullmatch(r"\d+(\.\d+)?", text.strip()) else [
            (path, f"expected an ISO 8601 timestamp, got '{text}'")]
    if kind == "blob":
        return typed(shape, text, path)
    return [(path, f"expected {kind}, got text")]


def form_tree(pairs):
    """`Filter.1.Name=x` pairs as nested dicts: {'Filter': {'1': {'Name': 'x'}}}."""
    tree = {}
    for key, value in pairs:
        node, parts = tree, key.split(".")
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                child = node[part] = {"": child}
            node = child
        node[parts[-1]] = value
    return tree


def _query_name(member_name, shape, ec2):
    """The name a member is sent under (botocore's EC2Serializer and QuerySerializer)."""
    if ec2:
        if "queryName" in shape.serialization:
            return shape.serialization["queryName"]
        name = shape.serialization.get("name", member_name)
        return name[0].upper() + name[1:]
    return shape.serialization.get("name", member_name)


def _indexed(node, path):
    """The items of a form list, in order; mismatches when the indexes are not 1..n."""
    if not isinstance(node, dict):
        return [], [(path, "expected an indexed list")]
    keys = sorted(node, key=lambda k: int(k) if k.isdigit() else -1)
    if keys != [str(i) for i in range(1, len(keys) + 1)]:
        return [], [(path, f"list indexes {keys} are not 1..{len(keys)}")]
    return [node[k] for k in keys], []


def form(shape, node, path, ec2):
    """A query-protocol form, as `form_tree` nests it."""
    kind = shape.type_name
    if kind == "structure":
        if not isinstance(node, dict):
            return [(path, f"expected members of {shape.name}, got a value")]
        sent = {_query_name(name, member, ec2): name for name, member in shape.members.items()}
        out = [(f"{path}.{key}", f"no member sent as '{key}' in {shape.name}") for key in node if key not in sent]
        present = [sent[key] for key in node if key in sent]
        out += _members(shape, present, path)
        for key, item in node.items():
            if key in sent:
                out += form(shape.members[sent[key]], item, f"{path}.{key}", ec2)
        return out
    if kind == "list":
        if node == "":
            return _limits(shape, 0, path, "list length")  # an empty list is sent as `Name=`
        if not ec2 and not shape.serialization.get("flattened"):
            inner = shape.member.serialization.get("name", "member")
            if not isinstance(node, dict) or list(node) != [inner]:
                return [(path, f"expected the list's items under '{inner}'")]
            node = node[inner]
        items, out = _indexed(node, path)
        out += _limits(shape, len(items), path, "list length")
        for i, item in enumerate(items, 1):
            out += form(shape.member, item, f"{path}.{i}", ec2)
        return out
    if kind == "map":
        entries, out = _indexed(node.get("entry") if isinstance(node, dict) else None, f"{path}.entry")
        for i, entry in enumerate(entries, 1):
            key_name = shape.key.serialization.get("name", "key")
            value_name = shape.value.serialization.get("name", "value")
            if not isinstance(entry, dict) or set(entry) != {key_name, value_name}:
                out.append((f"{path}.entry.{i}", f"expected {key_name} and {value_name}"))
                continue
            out += form(shape.key, entry[key_name], f"{path}.entry.{i}.{key_name}", ec2)
            out += form(shape.value, entry[value_name], f"{path}.entry.{i}.{value_name}", ec2)
        return out
    if isinstance(node, dict):
        return [(path, f"expected a {kind} value, got members {sorted(node)}")]
    return scalar_text(shape, node, path)


def _local(tag):
    return tag.rsplit("}", 1)[-1]


def xml(shape, element, path, ec2):
    """An XML answer element (EC2's or the query protocol's)."""
    kind = shape.type_name
    if kind == "structure":
        by_tag = {}
        for name, member in shape.members.items():
            if member.type_name == "list" and member.serialization.get("flattened"):
                by_tag[member.member.serialization.get("name", name)] = name
            else:
                by_tag[member.serialization.get("name", name)] = name
        out, present = [], []
        children = list(element)
        flat_lists = {}
        for child in children:
            tag = _local(child.tag)
            if tag not in by_tag:
                out.append((f"{path}.{tag}", f"no member answered as <{tag}> in {shape.name}"))
                continue
            name = by_tag[tag]
            present.append(name)
            member = shape.members[name]
            if member.type_name == "list" and member.serialization.get("flattened"):
                flat_lists.setdefault(name, []).append(child)
            else:
                out += xml(member, child, f"{path}.{tag}", ec2)
        for name, items in flat_lists.items():
            member = shape.members[name]
            out += _limits(member, len(items), f"{path}.{name}", "list length")
            out += [issue for i, item in enumerate(items) for issue in xml(member.member, item, f"{path}.{name}[{i}]", ec2)]
        # An answer may leave out a member its model marks required only where AWS does.
        out += _members(shape, list(dict.fromkeys(present)), path, required=True)
        return out
    if kind == "list":
        inner = shape.member.serialization.get("name", "member")
        out = []
        items = list(element)
        for i, child in enumerate(items):
            if _local(child.tag) != inner:
                out.append((f"{path}[{i}]", f"list item <{_local(child.tag)}>, the model says <{inner}>"))
                continue
            out += xml(shape.member, child, f"{path}[{i}]", ec2)
        return out + _limits(shape, len(items), path, "list length")
    if kind == "map":
        out = []
        key_name = shape.key.serialization.get("name", "key")
        value_name = shape.value.serialization.get("name", "value")
        for i, entry in enumerate(element):
            parts = {_local(c.tag): c for c in entry}
            if set(parts) != {key_name, value_name}:
                out.append((f"{path}[{i}]", f"expected <{key_name}> and <{value_name}>"))
                continue
            out += xml(shape.value, parts[value_name], f"{path}[{parts[key_name].text!r}]", ec2)
        return out
    if len(element):
        return [(path, f"expected a {kind} value, got elements")]
    return scalar_text(shape, element.text, path)
