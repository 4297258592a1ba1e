#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

int main() {
    std::ios::sync_with_stdio(false);
    std::cin.tie(nullptr);
    std::string s;
    std::cin >> s;
    const int n = static_cast<int>(s.size());
    // best[j]: fewest palindromic pieces covering s[0..j).
    std::vector<int> best(n + 1, n);
    best[0] = 0;
    // starts[j]: every i such that s[i..j] is a palindrome (found by expanding around
    // each centre); best[j + 1] is then relaxed from best[i] in order of j.
    std::vector<std::vector<int>> starts(n);
    for (int centre = 0; centre < 2 * n - 1; ++centre) {
        int i = centre / 2, j = i + centre % 2;
        while (i >= 0 && j < n && s[i] == s[j]) {
            starts[j].push_back(i);
            --i;
            ++j;
        }
    }
    for (int j = 0; j < n; ++j)
        for (int i : starts[j]) best[j + 1] = std::min(best[j + 1], best[i] + 1);
    std::cout << best[n] << '\n';
    return 0;
}
