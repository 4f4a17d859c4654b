"""Form and XML bodies read into plain values keyed by the model's member names, so the
documented rules (documented.py) and the pagination check read every protocol alike. Only
called once shapes.py found the body well formed."""


def _local(tag):
    return tag.rsplit("}", 1)[-1]


def of_xml(shape, element):
    kind = shape.type_name
    if kind == "structure":
        value = {}
        for name, member in shape.members.items():
            flat = member.type_name == "list" and member.serialization.get("flattened")
            tag = member.member.serialization.get("name", name) if flat else member.serialization.get("name", name)
            found = [c for c in element if _local(c.tag) == tag]
            if flat and found:
                value[name] = [of_xml(member.member, c) for c in found]
            elif found:
                value[name] = of_xml(member, found[0])
        return value
    if kind == "list":
        return [of_xml(shape.member, c) for c in element]
    if kind == "map":
        out = {}
        for entry in element:
            parts = {_local(c.tag): c for c in entry}
            key = parts.get(shape.key.serialization.get("name", "key"))
            val = parts.get(shape.value.serialization.get("name", "value"))
            if key is not None and val is not None:
                out[key.text] = of_xml(shape.value, val)
        return out
    return element.text or ""


def of_form(shape, node, ec2):
    from shapes import _query_name  # one spelling rule, shared with the validator

    kind = shape.type_name
    if kind == "structure" and isinstance(node, dict):
        sent = {_query_name(name, member, ec2): name for name, member in shape.members.items()}
        return {sent[k]: of_form(shape.members[sent[k]], v, ec2) for k, v in node.items() if k in sent}
    if kind == "list":
        if node == "" or not isinstance(node, dict):
            return []
        if not ec2 and not shape.serialization.get("flattened"):
            node = node.get(shape.member.serialization.get("name", "member"), {})
        keys = sorted((k for k in node if k.isdigit()), key=int)
        return [of_form(shape.member, node[k], ec2) for k in keys]
    return node


def count(value, expression):
    """Items a paginator's `result_key` names, for simple keys and `A[].B[]` paths."""
    values = [value]
    for part in expression.split("."):
        flatten = part.endswith("[]")
        key = part[:-2] if flatten else part
        nxt = []
        for v in values:
            item = v.get(key) if isinstance(v, dict) else None
            if item is None:
                continue
            nxt.extend(item if isinstance(item, list) else [item])
        values = nxt
    return len(values)
