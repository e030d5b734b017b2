import sys
acc, seed, name = 0.5, 1, "acc"
print(f"accuracy: {acc:.3f}")
print("accuracy:", acc, sep=" ")
print("accuracy: %.3f%%" % acc)
print("acc: {:.2f} {{x}}".format(acc))
print("a: " + str(acc) + ", b: " + str(seed))
print(f"condition=A seed={seed} acc: {acc} loss: {acc}")
print(f"PAIRED: {name} vs base mean_diff={acc} p_value={acc}")
print(f"INFO: {name}\nEpoch: {seed}, Loss: {acc}")
sys.stdout.write(f"solved: {seed}/{seed}\n")
