<?php
// fib.php: a PHP benchmark program of the kit's own (make run AGAINST=,
// docs/dormant.md): recursive calls, the work PHP's function__entry and
// function__return markers pass on every call.  Prints one line.
//     php src/examples/fib.php [N]
function fib($n) { return $n < 2 ? $n : fib($n - 1) + fib($n - 2); }
$n = isset($argv[1]) ? (int)$argv[1] : 30;
echo "fib($n) = " . fib($n) . "\n";
