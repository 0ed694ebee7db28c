# normcore.py — gdb pretty printers for normcore's tensors, so that
# `print x` in gdb shows what the tensor is instead of a shared_ptr, and a
# shape as its list of sizes:
#
#   (gdb) print g
#   $5 = Tensor [4, 2] float32 cpu
#   (gdb) print y
#   $6 = Tensor [4, 2] float32 cpu, requires grad, grad_fn TanhBackward
#   (gdb) print y.impl_._M_ptr->shape
#   $7 = Shape [4, 2]
#
# Load it with `gdb -x tools/gdb/normcore.py ...` (chapter 2). The printers
# only read memory; they never call a function in the program, which gdb
# cannot always do (gdb 13 on CPUs with AMX fails every call with "Couldn't
# write extended state status").
import gdb


def _pointer(shared_ptr):
    """The raw pointer inside a std::shared_ptr (libstdc++'s layout)."""
    return shared_ptr["_M_ptr"]


def _int64_vector(vector):
    """The elements of a std::vector<int64_t> (libstdc++'s layout)."""
    start = vector["_M_impl"]["_M_start"]
    finish = vector["_M_impl"]["_M_finish"]
    return [int((start + i).dereference()) for i in range(int(finish - start))]


def _shape_numbers(shape):
    """The sizes in an nc::Shape (tensor/shape.h): up to kMaxDims of them in
    the array inline_, more in the vector heap_."""
    ndim = int(shape["ndim_"])
    inline = shape["inline_"]
    if ndim <= inline.type.range()[1] + 1:
        return [int(inline[i]) for i in range(ndim)]
    return _int64_vector(shape["heap_"])


class ShapePrinter:
    def __init__(self, value):
        self.value = value

    def to_string(self):
        return "Shape [" + ", ".join(str(d) for d in _shape_numbers(self.value)) + "]"


def _string(value):
    """A std::string's characters (libstdc++'s layout)."""
    return value["_M_dataplus"]["_M_p"].string(length=int(value["_M_string_length"]))


def _enum_name(value):
    """'Float32' from nc::DType::Float32."""
    return str(value).split("::")[-1]


class TensorPrinter:
    def __init__(self, value):
        self.value = value

    def to_string(self):
        impl_ptr = _pointer(self.value["impl_"])
        if int(impl_ptr) == 0:
            return "Tensor (undefined)"
        impl = impl_ptr.dereference()
        shape = "[" + ", ".join(str(d) for d in _shape_numbers(impl["shape"])) + "]"
        device = impl["device"]
        place = "cpu" if _enum_name(device["type"]) == "CPU" else "cuda:%d" % int(device["index"])
        text = "Tensor %s %s %s" % (shape, _enum_name(impl["dtype"]).lower(), place)
        if bool(impl["requires_grad"]):
            text += ", requires grad"
        grad_fn = _pointer(impl["grad_fn"])
        if int(grad_fn) != 0:
            text += ", grad_fn " + _string(grad_fn.dereference()["name"])
        name = _string(impl["name"])
        if name:
            text += ", name '%s'" % name
        return text


def _lookup(value):
    type_ = value.type.strip_typedefs()
    if type_.code == gdb.TYPE_CODE_REF:
        type_ = type_.target().strip_typedefs()
    if type_.unqualified().tag == "nc::Tensor":
        return TensorPrinter(value)
    if type_.unqualified().tag == "nc::Shape":
        return ShapePrinter(value)
    return None


gdb.pretty_printers.append(_lookup)
