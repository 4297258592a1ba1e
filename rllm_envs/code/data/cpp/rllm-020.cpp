#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

int main() {
    std::ios::sync_with_stdio(false);
    std::cin.tie(nullptr);
    int n, q;
    std::cin >> n >> q;
    std::vector<long long> a(n);
    for (auto& x : a) std::cin >> x;
    std::sort(a.begin(), a.end());
    std::string out;
    for (int k = 0; k < q; ++k) {
        long long x;
        std::cin >> x;
        out += std::to_string(std::upper_bound(a.begin(), a.end(), x) - a.begin());
        out += '\n';
    }
    std::cout << out;
    return 0;
}
