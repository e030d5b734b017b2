# verdict: accept
# Filtering a config dict down to a function's arguments (guided-diffusion's script_util):
# getfullargspec reads the function's names and defaults as signature does; the eval the
# library reaches from both looks up the dotted names of a builtin's text signature only.
import argparse
import inspect


def create_model(image_size=64, num_channels=128, learn_sigma=False):
    return {"image_size": image_size, "num_channels": num_channels, "sigma": learn_sigma}


def args_to_dict(args, keys):
    return {k: getattr(args, k) for k in keys}


defaults = dict(image_size=64, num_channels=128, learn_sigma=False, batch_size=4)
parser = argparse.ArgumentParser()
for k, v in defaults.items():
    parser.add_argument(f"--{k}", default=v, type=type(v))
args = parser.parse_args([])
arg_names = inspect.getfullargspec(create_model)[0]
spec = inspect.getfullargspec(len)
params = inspect.signature(create_model).parameters
bound = inspect.Signature.from_callable(create_model).bind(image_size=32)
print(create_model(**args_to_dict(args, arg_names)), spec.args, list(params), bound.arguments)
