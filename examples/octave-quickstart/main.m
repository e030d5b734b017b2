% labbox quickstart in GNU Octave: ridge regression on synthetic data at three strengths.
%
% The harness conventions as in examples/quickstart: a fixed seed, a time budget (from
% LABBOX_BUDGET, default 300 s), a one-condition pilot that prints TIME_ESTIMATE before the
% main loop, a time guard at 80% of the budget, `condition: X` then `name: value` lines on
% stdout, results.json.
1;
function m = run_condition(lambda, x_tr, y_tr, x_te, y_te, w_true)
  nf = columns(x_tr);
  for i = 1:20
    w = (x_tr' * x_tr + lambda * eye(nf)) \ (x_tr' * y_tr);
  end
  m.train_mse = mean((x_tr * w - y_tr) .^ 2);
  m.test_mse = mean((x_te * w - y_te) .^ 2);
  m.weight_error = norm(w - w_true);
end

rand("twister", 42); randn("state", 42);
n_train = 2000; n_test = 1000; n_features = 50; noise = 0.5;
names = {"lambda_0.01", "lambda_1", "lambda_100"}; lambdas = [0.01, 1, 100];
w_true = randn(n_features, 1);
x = randn(n_train + n_test, n_features);
y = x * w_true + noise * randn(n_train + n_test, 1);
x_tr = x(1:n_train, :); y_tr = y(1:n_train);
x_te = x(n_train+1:end, :); y_te = y(n_train+1:end);

budget = str2double(getenv("LABBOX_BUDGET"));
if isnan(budget), budget = 300; end
t0 = tic();
tp = tic(); run_condition(lambdas(1), x_tr, y_tr, x_te, y_te, w_true);
printf("TIME_ESTIMATE: %.2fs\n", toc(tp) * numel(lambdas));

json = "{";
best = Inf;
for i = 1:numel(lambdas)
  if toc(t0) > 0.8 * budget
    printf("TIME_GUARD: %.1fs - saving partial results\n", toc(t0));
    break;
  end
  m = run_condition(lambdas(i), x_tr, y_tr, x_te, y_te, w_true);
  printf("condition: %s\n", names{i});
  printf("train_mse: %.6f\ntest_mse: %.6f\nweight_error: %.6f\n", m.train_mse, m.test_mse, m.weight_error);
  best = min(best, m.test_mse);
  sep = ""; if i > 1, sep = ", "; end
  json = [json, sprintf("%s\"%s\": {\"test_mse\": %.6f}", sep, names{i}, m.test_mse)];
end
printf("best_test_mse: %.6f\n", best);
fid = fopen("results.json", "w");
fprintf(fid, "%s, \"best_test_mse\": %.6f}\n", json, best);
fclose(fid);
